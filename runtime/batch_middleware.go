package runtime

import (
	"context"
	"fmt"
	"slices"
)

// BatchCall is one call of a batch task's function (HandleBatch), as a
// BatchMiddleware sees it.
type BatchCall struct {
	Task  string
	Route string // the task's route
	// Jobs are the batch's jobs in the order of the function's args, as
	// BatchJobs gives them.
	Jobs []Job
	// Contexts are each job's handler context, in the same order, as
	// BatchContexts gives them: what each job's own middleware put there
	// (a tracing middleware, its run's span) is in its context.
	Contexts []context.Context
}

// BatchMiddleware wraps each call of a batch task's function, once per
// batch, inside the middleware of each of its jobs' runs (Middleware, which
// runs once per job around the job's wait for its batch). next calls the
// function with ctx, whose values the function sees (BatchJobs and
// BatchContexts still answer on it), and returns the error that fails the
// whole batch (the function's single error, a panic, entries of the wrong
// length), nil when the function returned its entries: a job's own error
// is that job's, told to its run's middleware. An error a BatchMiddleware
// returns fails every job of the batch; one that returns nil without
// calling next fails them too, with an error that says so.
type BatchMiddleware func(ctx context.Context, call BatchCall, next func(context.Context) error) error

// UseBatch adds middleware around each call of the worker's batch tasks'
// functions, inside any added before. Call it before Run, as Use.
func (w *Worker) UseBatch(ms ...BatchMiddleware) {
	if w.started.Load() {
		panic("bananas: Worker.UseBatch called after Run: add middleware before the worker runs")
	}
	for i, m := range ms {
		if m == nil { // refused by Run with the other registration errors
			w.regErrs = append(w.regErrs, fmt.Errorf("Worker.UseBatch: middleware %d of the call is nil", i))
			return
		}
	}
	w.batchMiddleware = append(slices.Clip(w.batchMiddleware), ms...)
}

// aroundBatch calls fn on ctx through ms, ms[0] outermost.
func aroundBatch(ctx context.Context, ms []BatchMiddleware, call BatchCall, fn func(context.Context) error) error {
	if len(ms) == 0 {
		return fn(ctx)
	}
	called := false
	err := ms[0](ctx, call, func(ctx context.Context) error {
		called = true
		return aroundBatch(ctx, ms[1:], call, fn)
	})
	if err == nil && !called {
		err = fmt.Errorf("bananas: a batch middleware of task %s returned without calling the batch function", call.Task)
	}
	return err
}
