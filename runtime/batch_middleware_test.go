package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// wrapped is a batch task whose calls the tests below wrap in BatchMiddleware.
var wrapped = runtime.NewTask[Ev, int]("t_batch_wrapped", runtime.Route("batchw"), runtime.MaxRetries(0))

// A BatchMiddleware runs once around each call of the function, sees the
// batch's jobs and each one's context, and gives the
// function its context; one that returns without calling the function
// fails every job of the batch with an error that says so.
func TestBatch_MiddlewareWrapsEachCallOnceAndMustCallTheFunction(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := wrapped.With(c)
		type key struct{}
		var mu sync.Mutex
		var seen []runtime.BatchCall
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batchw"}, Concurrency: 4}))
		w.UseBatch(func(ctx context.Context, call runtime.BatchCall, next func(context.Context) error) error {
			mu.Lock()
			seen = append(seen, call)
			mu.Unlock()
			if call.Jobs[0].Attempt == 1 && len(seen) == 2 {
				return nil // the second batch: the function is not called
			}
			return next(context.WithValue(ctx, key{}, "wrapped"))
		})
		runtime.HandleBatch(w, task, runtime.Batch{Size: 2, Linger: time.Minute}, func(ctx context.Context, evs []Ev) ([]int, []error, error) {
			if ctx.Value(key{}) != "wrapped" {
				return nil, nil, errors.New("the function's context is not the middleware's")
			}
			if _, ok := runtime.BatchJobs(ctx); !ok {
				return nil, nil, errors.New("BatchJobs does not answer on the middleware's context")
			}
			out := make([]int, len(evs))
			for i, e := range evs {
				out[i] = e.N
			}
			return out, nil, nil
		})
		first, err := task.EnqueueMany(ctx, []Ev{{N: 1}, {N: 2}})
		if err != nil {
			t.Fatal(err)
		}
		startWorker(t, w)
		for i, id := range first {
			if got, err := task.Await(ctx, id); err != nil || got != i+1 {
				t.Fatalf("Await job %d = %d, %v", i, got, err)
			}
		}
		second, err := task.EnqueueMany(ctx, []Ev{{N: 3}, {N: 4}})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range second {
			if _, err := task.Await(ctx, id); err == nil || !strings.Contains(err.Error(), "returned without calling the batch function") {
				t.Fatalf("Await of a job whose batch middleware skipped the function = %v, want its error", err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 2 {
			t.Fatalf("the middleware ran %d times for 2 batches", len(seen))
		}
		for i, ids := range [][]string{first, second} {
			call := seen[i]
			if call.Task != "t_batch_wrapped" || call.Route != "batchw" || len(call.Jobs) != 2 || len(call.Contexts) != 2 {
				t.Fatalf("call %d: %+v", i, call)
			}
			for j, job := range call.Jobs {
				if !slices.Contains(ids, job.ID) {
					t.Fatalf("call %d's job %d is %s, not one of the batch's %v", i, j, job.ID, ids)
				}
				if cj, ok := runtime.CurrentJob(call.Contexts[j]); !ok || cj.ID != job.ID {
					t.Fatalf("call %d's context %d is job %s's, want %s's", i, j, cj.ID, job.ID)
				}
			}
		}
	})
}
