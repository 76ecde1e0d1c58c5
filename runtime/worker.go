package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/shell"
	"github.com/bananas-go/bananas/runtime/internal/worker"
	"github.com/bananas-go/bananas/scheduler"
)

// Worker runs the handlers registered on it for jobs of its routes. It
// holds the handlers, the cron entries and the options; Run hands them,
// behind an executor, to package worker (runtime/internal/worker), which
// runs the engine and the loops around it.
type Worker struct {
	c        *Client
	opts     WorkerOptions
	id       string
	mode     string // WORKER_MODE, when started by Main
	handlers handlers
	cron     []cronEntry
	regErrs  []error
	started  atomic.Bool

	batchMiddleware []BatchMiddleware // UseBatch
}

// NewWorker returns a worker over client c. Register handlers (the generated
// Register functions, or Handle) before Run.
func NewWorker(c *Client, opts WorkerOptions) *Worker {
	host, _ := os.Hostname()
	return &Worker{
		c: c, opts: opts, handlers: handlers{},
		id: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), queue.NewID("w", time.Now())[20:26]),
	}
}

// ID returns the worker's id (host-pid-random).
func (w *Worker) ID() string { return w.id }

// Client returns the client the worker runs on: the one NewWorker was
// given, or for a program run by Main, the one Main connected. A function
// registered with Main reaches it here (to add an EnqueueHook, say).
func (w *Worker) Client() *Client { return w.c }

// Use adds middleware to the worker, inside WorkerOptions.Middleware and
// any added before, so that a function registered with Main, which builds
// the worker itself, can add a tracing or logging middleware. Call it
// before Run; a call once Run has started panics, as the middleware chain
// is fixed then.
func (w *Worker) Use(ms ...Middleware) {
	if w.started.Load() {
		panic("bananas: Worker.Use called after Run: add middleware before the worker runs")
	}
	for i, m := range ms {
		if m == nil { // refused by Run with the other registration errors
			w.regErrs = append(w.regErrs, fmt.Errorf("Worker.Use: middleware %d of the call is nil", i))
			return
		}
	}
	w.opts.Middleware = append(slices.Clip(w.opts.Middleware), ms...)
}

func (w *Worker) register(h *handler) {
	if _, dup := w.handlers[h.name]; dup {
		w.regErrs = append(w.regErrs, fmt.Errorf("task %s is registered twice", h.name))
		return
	}
	w.handlers[h.name] = h
}

// Tasks returns the names of the registered tasks, sorted.
func (w *Worker) Tasks() []string {
	names := make([]string, 0, len(w.handlers))
	for n := range w.handlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Run works jobs until ctx ends, then shuts down gracefully: it stops taking
// jobs, lets running ones finish for ShutdownTimeout, hands the rest back to
// their queues without counting an attempt, and returns.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("bananas: Worker.Run called twice")
	}
	if err := w.opts.withDefaults(w.regErrs); err != nil {
		return fmt.Errorf("bananas: worker: %w", err)
	}
	// The worker's hooks: the client's subscribers, then its own: its
	// middleware, the workflows its jobs are steps of, its OnJobEnd.
	ends := []endSubscriber{{h: workflowSink{w.c, w.opts.Logger.Warn}, inline: true}}
	if w.opts.OnJobEnd != nil {
		ends = append(ends, endSubscriber{h: JobEndFunc(w.opts.OnJobEnd)})
	}
	mw, subscribers := w.c.hooks.forWorker(w.opts.Middleware, ends...)
	sinks, stopSinks := endSinks(subscribers, w.c.openEnd, w.opts.Logger)
	defer stopSinks() // after the engine has stopped: every end told
	return worker.Run(ctx, w.runConfig(mw, sinks))
}

// runConfig is what package worker runs of w: its options, its tasks and
// cron entries, its handlers behind an executor with the middleware mw,
// and its ends told to sinks.
func (w *Worker) runConfig(mw Middleware, sinks []engine.JobEndSink) worker.Config {
	o := &w.opts
	x := &executor{tasks: w.handlers, mw: mw, maxPayload: w.c.maxPayload, backoff: o.Backoff, payloads: w.c.payloads, log: o.Logger}
	cfg := worker.Config{
		Queue: w.c.q, Listener: w.c.listener, Logger: o.Logger, Metrics: w.c.metrics,
		ID: w.id, Mode: w.mode, SchedulerMode: shell.ModeSchedulerOnly,
		Routes: o.Routes, Priorities: o.Priorities, JobTypes: o.JobTypes, Concurrency: o.Concurrency, SchedulerOnly: o.SchedulerOnly,
		Lease: o.Lease, ShutdownTimeout: o.ShutdownTimeout, JobTimeout: o.JobTimeout,
		ResultTTL: o.ResultTTL, FailureTTL: o.FailureTTL, SafetyPoll: o.SafetyPoll,
		Tasks: w.runTasks(), Cron: w.runCron(),
		Exec: x.exec, RetryDelay: x.retryDelay, JobKey: jobKey{}, JobValue: handlerValue(w.c), Sinks: sinks,
		ProgressEvery: ProgressEvery,
		Workflows:     w.c.workflowRunner(),
		Schedules:     w.scheduleRunner(),
		Batches:       w.batches(),
		StoredError:   w.c.storedError,
	}
	if store := w.c.History(); store != nil {
		cfg.History = &worker.History{Store: store, Row: w.historyRow,
			Backlog: o.HistoryBacklog, Retention: o.HistoryRetention, Migrate: o.HistoryMigrate}
	}
	return cfg
}

// runTasks are w's tasks as package worker takes them, by name.
func (w *Worker) runTasks() []worker.Task {
	var out []worker.Task
	for _, name := range w.Tasks() {
		if h := w.handlers[name]; h.info != nil && h.limits != nil {
			out = append(out, worker.Task{Name: name, Route: h.info().Route, Limits: h.limits()})
		}
	}
	return out
}

// runCron are w's cron entries as the scheduler takes them, each tick's
// job made through w's client.
func (w *Worker) runCron() []scheduler.CronEntry {
	entries := make([]scheduler.CronEntry, len(w.cron))
	for i, e := range w.cron {
		entries[i] = scheduler.CronEntry{
			Name: e.Name, Route: e.Route, Priority: e.Priority, Spec: e.Spec, TZ: e.TZ,
			Job: func(tick time.Time) (queue.NewJob, error) { return e.job(w.c, tick) },
		}
	}
	return entries
}

// Handle registers fn as the handler of task t on worker w. Generated Register
// functions call it once per task; registering a name twice is an error
// reported by Run.
func Handle[A, R any](w *Worker, t *Task[A, R], fn func(context.Context, A) (R, error)) {
	h := handlerOf(t)
	h.run = func(ctx context.Context, raw []byte) ([]byte, error) {
		var args A
		if err := decode(raw, &args); err != nil {
			return nil, &decodeError{fmt.Errorf("decode args of %s: %w", t.name, err)}
		}
		res, err := fn(ctx, args)
		if err != nil {
			return nil, err
		}
		out, err := encode(res)
		if err != nil {
			return nil, &decodeError{fmt.Errorf("encode result of %s: %w", t.name, err)}
		}
		return out, nil
	}
	w.register(h)
}

// handlerOf is what a worker knows of task t whatever runs its jobs (one
// at a time, Handle, or in batches, HandleBatch): its types, limits and
// the JSON doors of the API; the caller sets how a job runs.
func handlerOf[A, R any](t *Task[A, R]) *handler {
	var resultType reflect.Type
	if _, none := any(*new(R)).(None); !none {
		resultType = reflect.TypeFor[R]()
	}
	return &handler{
		name:     t.name,
		info:     t.Info,
		limits:   func() queue.Limits { return t.limits },
		argsType: reflect.TypeFor[A](), resultType: resultType,
		enqueueJSON: func(ctx context.Context, c *Client, data []byte, opts []Option) (string, error) {
			return t.With(c).EnqueueJSON(ctx, data, opts...)
		},
		jobJSON: func(c *Client, data []byte, opts []Option, shards map[string]string) (admin.BatchJob, error) {
			return t.With(c).jobJSON(data, opts, shards)
		},
		stepJSON: func(c *Client, args []byte, first bool) (*stepNode, error) {
			return t.With(c).stepNodeJSON(args, first)
		},
		argsJSON:   jsonOf[A],
		resultJSON: jsonOf[R],
	}
}

// cronEntry is a task enqueued on a schedule, registered by Schedule: its
// view (bananastype.Schedule of Source code, the state fields left zero)
// and how to make a tick's job.
type cronEntry struct {
	bananastype.Schedule
	job func(c *Client, tick time.Time) (queue.NewJob, error)
}
