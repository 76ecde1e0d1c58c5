package runtime

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/engine"
)

// Batch says how a batch task's jobs are handed to its function
// (HandleBatch, the annotation keys batch= and linger=).
type Batch struct {
	// Size is the most jobs one call takes (batch=), 1 to 10,000.
	Size int
	// Linger is how long a batch that is not full waits for more jobs
	// after its first (linger=); 0 takes 100ms.
	Linger time.Duration
}

// DefaultLinger is the Linger of a Batch that sets none.
const DefaultLinger = 100 * time.Millisecond

// MaxBatchSize is the largest Batch.Size.
const MaxBatchSize = 10000

// HandleBatch registers fn as the handler of t's jobs, which it takes many
// at once: a worker hands fn up to b.Size jobs of t — of one key, when the
// task's jobs are keyed (KeyBy, key=) — as soon as b.Size are in hand or
// b.Linger after the first. Callers still enqueue, await and call one job
// at a time (t.Enqueue, t.Await, t.Call); generated code calls HandleBatch
// for a task annotated with batch=.
//
// fn returns either one error for the whole batch (err: every job of the
// batch fails with it), or one entry per job, in the order of args: errs[i]
// nil completes job i with results[i] (results may be nil when R is None),
// errs[i] non-nil fails job i alone, which retries or dead-letters by its
// own attempts. A nil errs completes every job. An errs or results of
// another length than args fails the whole batch with an error that says
// so; so does a panic. SkipRetry and RetryAfter hold per entry as for a
// single job.
//
// Each job of a batch keeps its own identity: its slot (a batch of n jobs
// holds n of the worker's Concurrency slots, so a batch is at most
// Concurrency jobs), lease, attempts, retries, cancel, timeout, result
// record, end event, history row and middleware run. The batch's context
// ends at the latest of its jobs' deadlines (each job's timeout, plus
// Linger, from its fetch), or once every job of the batch was canceled or
// handed back; BatchJobs(ctx) lists its jobs.
func HandleBatch[A, R any](w *Worker, t *Task[A, R], b Batch, fn func(ctx context.Context, args []A) (results []R, errs []error, err error)) {
	switch {
	case fn == nil:
		w.regErrs = append(w.regErrs, fmt.Errorf("HandleBatch of task %s: the function is nil", t.name))
		return
	case b.Size < 1 || b.Size > MaxBatchSize:
		w.regErrs = append(w.regErrs, fmt.Errorf("HandleBatch of task %s: Batch.Size %d is not from 1 to %d", t.name, b.Size, MaxBatchSize))
		return
	case b.Linger < 0:
		w.regErrs = append(w.regErrs, fmt.Errorf("HandleBatch of task %s: Batch.Linger %s is negative", t.name, b.Linger))
		return
	}
	if b.Linger == 0 {
		b.Linger = DefaultLinger
	}
	_, none := any(*new(R)).(None)
	bt := &batcher{name: t.name, route: t.Info().Route, size: b.Size, linger: b.Linger, open: map[string]*gathering{},
		keyed: t.keyBy != nil || t.limits != (queue.Limits{}), keyOf: t.keyOfStored,
		call: func(ctx context.Context, raws [][]byte) ([]outcome, error) {
			return callBatch(ctx, t.name, raws, none, fn)
		}}
	bt.middleware = func() []BatchMiddleware { return w.batchMiddleware }
	h := handlerOf(t)
	h.run, h.batch = bt.submit, bt
	w.register(h)
}

// callBatch decodes the args of a batch, calls fn once on those that
// decode, and returns each job's outcome in order; a whole-batch failure
// (fn's error, a panic, entries of the wrong length) is the error.
func callBatch[A, R any](ctx context.Context, name string, raws [][]byte, none bool, fn func(context.Context, []A) ([]R, []error, error)) (outs []outcome, err error) {
	outs = make([]outcome, len(raws))
	args := make([]A, 0, len(raws))
	at := make([]int, 0, len(raws)) // args[j] is the job raws[at[j]]
	for i, raw := range raws {
		var a A
		if err := decode(raw, &a); err != nil {
			outs[i].err = &decodeError{fmt.Errorf("decode args of %s: %w", name, err)}
			continue
		}
		args, at = append(args, a), append(at, i)
	}
	if len(args) == 0 {
		return outs, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	results, errs, err := fn(ctx, args)
	switch {
	case err != nil:
		return nil, err
	case errs != nil && len(errs) != len(args):
		return nil, fmt.Errorf("bananas: batch handler of %s returned %d errors for %d jobs: it must return one entry per job, in order (nil for a job that succeeded), or a nil slice", name, len(errs), len(args))
	case !none && len(results) != len(args):
		return nil, fmt.Errorf("bananas: batch handler of %s returned %d results for %d jobs: it must return one result per job, in order", name, len(results), len(args))
	}
	for j, i := range at {
		if errs != nil && errs[j] != nil {
			outs[i].err = errs[j]
			continue
		}
		var r R
		if !none {
			r = results[j]
		}
		b, err := encode(r)
		if err != nil {
			outs[i].err = &decodeError{fmt.Errorf("encode result of %s: %w", name, err)}
			continue
		}
		outs[i].result = b
	}
	return outs, nil
}

// batcher gathers the jobs of one batch task into batches and calls the
// task's function once per batch. Every job's run reaches it through the
// handler (submit), each holding its own slot, lease and timeout in the
// engine while it waits: a batch is whatever runs of one key wait together.
type batcher struct {
	name   string
	route  string
	size   int
	linger time.Duration
	keyed  bool
	// keyOf reads the key of stored args: the batch of a keyed job that
	// came without its flow (another fetch took it) is its key's.
	keyOf func(args []byte) (string, error)
	call  func(ctx context.Context, raws [][]byte) ([]outcome, error)
	// middleware is the worker's BatchMiddleware, read at each call: a
	// function registered with Main adds it after the task's handler.
	middleware func() []BatchMiddleware

	mu   sync.Mutex
	open map[string]*gathering // by flow: the batch filling for each key
}

// gathering is one batch while it fills.
type gathering struct {
	entries []*batchEntry
	timer   *time.Timer
}

// batchEntry is one job's run waiting in a batch.
type batchEntry struct {
	ctx  context.Context
	run  *batchRun
	args []byte
	done chan outcome // 1-buffered: the job's outcome
}

type batchKey struct{}

// batchRun is what exec puts in a batch job's context for submit: the job's
// flow (which batch it joins) and its Job (BatchJobs); the batcher puts
// there the Together of the batch the job ran in, for exec to return with
// the run's outcome, so that the engine records the batch's outcomes in one
// call.
type batchRun struct {
	flow     string
	job      Job
	together *engine.Together // set before the job's outcome is handed back
}

// withBatchRun carries d's flow and job to the batcher (see batchRun).
func withBatchRun(ctx context.Context, d *queue.Dispatch, job Job) (context.Context, *batchRun) {
	br := &batchRun{flow: d.Flow, job: job}
	return context.WithValue(ctx, batchKey{}, br), br
}

// submit adds a job's run to the batch of its flow and waits for the
// batch's outcome for it. It is the batch task's handler.run: the
// middleware of the job's run is around it.
func (b *batcher) submit(ctx context.Context, args []byte) ([]byte, error) {
	br, _ := ctx.Value(batchKey{}).(*batchRun)
	if br == nil {
		br = &batchRun{} // called outside a worker's run (a middleware's own call)
	}
	flow := br.flow
	if flow == "" && b.keyed {
		if k, err := b.keyOf(args); err == nil {
			flow = b.name + "|" + k
		}
	}
	e := &batchEntry{ctx: ctx, run: br, args: args, done: make(chan outcome, 1)}
	b.mu.Lock()
	g := b.open[flow]
	if g == nil {
		g = &gathering{}
		b.open[flow] = g
		g.timer = time.AfterFunc(b.linger, func() { b.fireOpen(flow, g) })
	}
	g.entries = append(g.entries, e)
	full := len(g.entries) >= b.size
	if full {
		delete(b.open, flow)
		g.timer.Stop()
	}
	b.mu.Unlock()
	if full {
		go b.fire(g.entries)
	}
	o := <-e.done
	return o.result, o.err
}

// fireOpen calls the batch g of flow once its linger is over, unless it
// filled and was called already.
func (b *batcher) fireOpen(flow string, g *gathering) {
	b.mu.Lock()
	if b.open[flow] != g {
		b.mu.Unlock()
		return
	}
	delete(b.open, flow)
	b.mu.Unlock()
	b.fire(g.entries)
}

// fire calls the task's function on the entries whose run is still on
// (a job canceled or timed out while it waited is left out, its outcome
// recorded by the engine already) and hands each entry its outcome.
func (b *batcher) fire(entries []*batchEntry) {
	live := entries[:0:0]
	for _, e := range entries {
		if err := e.ctx.Err(); err != nil {
			e.done <- outcome{err: fmt.Errorf("bananas: job left its batch before the call: %w", context.Cause(e.ctx))}
			continue
		}
		live = append(live, e)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := batchContext(live)
	defer cancel()
	raws := make([][]byte, len(live))
	for i, e := range live {
		raws[i] = e.args
	}
	var outs []outcome
	err := b.around(ctx, live, func(ctx context.Context) error {
		var err error
		outs, err = b.call(ctx, raws)
		return err
	})
	if err == nil && len(outs) != len(live) {
		err = fmt.Errorf("bananas: a batch middleware of task %s returned nil without the batch function's entries", b.name)
	}
	// Each run's outcome is recorded with the batch's, one call for all;
	// a run whose middleware called its handler twice stays with the
	// batch of its first call, which waits for its return.
	var joining []*batchRun
	for _, e := range live {
		if e.run.together == nil {
			joining = append(joining, e.run)
		}
	}
	together := engine.NewTogether(len(joining))
	for _, br := range joining {
		br.together = together
	}
	for i, e := range live {
		if err != nil {
			e.done <- outcome{err: err}
		} else {
			e.done <- outs[i]
		}
	}
}

// batchContext is the context of a batch's call: it ends at the latest of
// its jobs' deadlines, or once every job's run was canceled (a cancel, a
// hand-back at shutdown, a timeout of its own). BatchJobs reads its jobs.
func batchContext(entries []*batchEntry) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, e := range entries {
		if d, ok := e.ctx.Deadline(); ok && d.After(latest) {
			latest = d
		}
	}
	ctx := context.WithValue(context.Background(), batchJobsKey{}, entries)
	var cancel context.CancelFunc
	if latest.IsZero() {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithDeadline(ctx, latest)
	}
	var left atomic.Int32
	left.Store(int32(len(entries)))
	stops := make([]func() bool, len(entries))
	for i, e := range entries {
		stops[i] = context.AfterFunc(e.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

type batchJobsKey struct{}

// BatchJobs returns the jobs of the batch whose function received ctx, in
// the order of its args; false for a context that is not a batch's.
func BatchJobs(ctx context.Context) ([]Job, bool) {
	entries, ok := ctx.Value(batchJobsKey{}).([]*batchEntry)
	if !ok {
		return nil, false
	}
	jobs := make([]Job, len(entries))
	for i, e := range entries {
		jobs[i] = e.run.job
	}
	return jobs, true
}

// BatchContexts returns the context of each job of the batch whose
// function received ctx, in the order of its args: each is that job's
// handler context, on which CurrentJob, Progress and Once work as in a
// single job's handler, and which ends when that job is canceled or its
// own deadline passes. False for a context that is not a batch's.
func BatchContexts(ctx context.Context) ([]context.Context, bool) {
	entries, ok := ctx.Value(batchJobsKey{}).([]*batchEntry)
	if !ok {
		return nil, false
	}
	ctxs := make([]context.Context, len(entries))
	for i, e := range entries {
		ctxs[i] = e.ctx
	}
	return ctxs, true
}

// batches are w's batch tasks as the engine takes them. A batch larger
// than the worker's Concurrency is said once: a batch holds a slot per job,
// so it never grows past Concurrency.
func (w *Worker) batches() []engine.Batch {
	var out []engine.Batch
	for _, name := range w.Tasks() {
		h := w.handlers[name]
		if h.batch == nil {
			continue
		}
		if h.batch.size > w.opts.Concurrency && w.opts.Logger != nil {
			w.opts.Logger.Warn("bananas: a batch holds a worker slot per job, so this task's batches hold at most Concurrency jobs; raise Concurrency to fill them",
				"task", name, "batch", h.batch.size, "concurrency", w.opts.Concurrency)
		}
		out = append(out, engine.Batch{Task: name, Route: h.info().Route, Size: h.batch.size, Linger: h.batch.linger, Keyed: h.batch.keyed})
	}
	return out
}

// around calls fn through the worker's BatchMiddleware for the batch of
// entries; a panic of a middleware fails the batch, as the function's.
func (b *batcher) around(ctx context.Context, entries []*batchEntry, fn func(context.Context) error) (err error) {
	ms := b.middleware()
	if len(ms) == 0 {
		return fn(ctx)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return aroundBatch(ctx, ms, b.callOf(entries), fn)
}

// callOf is the BatchCall of a batch of entries.
func (b *batcher) callOf(entries []*batchEntry) BatchCall {
	call := BatchCall{Task: b.name, Route: b.route, Jobs: make([]Job, len(entries)), Contexts: make([]context.Context, len(entries))}
	for i, e := range entries {
		call.Jobs[i], call.Contexts[i] = e.run.job, e.ctx
	}
	return call
}
