package runtime

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/internal/engine"
)

// The hooks of a client and of its workers are one registry of
// subscribers, one list per operation: an enqueue (HookEnqueue), the start
// of a run (HookWorkBegin), and a run's recorded end (HookWorkEnd). A
// subscriber implements the interfaces of the operations it follows, and
// is added once (Client.AddHook); EnqueueHook, Middleware and JobEndFunc
// are the one-operation subscribers as functions, and AddEnqueueHook,
// WorkerOptions.Middleware and WorkerOptions.OnJobEnd add them. The
// client's own metrics (the ends of runs) and its workflows (a step's end
// advances its workflow) subscribe the same way.

// HookEnqueue is a subscriber to a client's enqueues: Enqueue wraps each
// enqueue call, as an EnqueueHook does (see EnqueueHook for what it may
// do and must do with next).
type HookEnqueue interface {
	Enqueue(ctx context.Context, e *Enqueueing, next func(context.Context) error) error
}

// HookWorkBegin is a subscriber to the runs of a client's workers: WorkBegin
// wraps each handler call, as a Middleware does (see Middleware).
type HookWorkBegin interface {
	WorkBegin(ctx context.Context, job Job, next func(context.Context) error) error
}

// HookWorkEnd is a subscriber to the recorded ends of the runs of a
// client's workers: JobEnded is told each end once Redis has it (see
// bananastype.JobEnd), on a goroutine of its own, one end at a time in
// the order they were recorded, never on the job's path; up to 1024 ends
// wait for a slow subscriber, past that the next are dropped and the drop
// is logged. A worker's Run returns after each subscriber has seen every
// end recorded before it stopped.
type HookWorkEnd interface {
	JobEnded(e bananastype.JobEnd)
}

// Enqueue makes an EnqueueHook a HookEnqueue.
func (h EnqueueHook) Enqueue(ctx context.Context, e *Enqueueing, next func(context.Context) error) error {
	return h(ctx, e, next)
}

// WorkBegin makes a Middleware a HookWorkBegin.
func (m Middleware) WorkBegin(ctx context.Context, job Job, next func(context.Context) error) error {
	return m(ctx, job, next)
}

// JobEndFunc is a HookWorkEnd as a function (WorkerOptions.OnJobEnd).
type JobEndFunc func(bananastype.JobEnd)

// JobEnded calls f.
func (f JobEndFunc) JobEnded(e bananastype.JobEnd) { f(e) }

// hooks is a registry: its subscribers by operation, in the order added.
type hooks struct {
	mu        sync.Mutex
	enqueue   []HookEnqueue
	workBegin []HookWorkBegin
	workEnd   []endSubscriber
	// enqueueRun is enqueue composed (enqueue[0] outermost), nil while
	// there is none, so that an enqueue without hooks pays one atomic load.
	enqueueRun atomic.Pointer[EnqueueHook]
}

// endSubscriber is a subscriber to the ends of runs. An inline one (the
// client's own: metrics, workflows) returns at once and is told on the
// engine's path; any other gets a goroutine of its own (jobEndHook).
type endSubscriber struct {
	h      HookWorkEnd
	inline bool
}

// add subscribes h to the operations it implements, and reports whether it
// implements any; inline is endSubscriber's.
func (r *hooks) add(h any, inline bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	subscribed := false
	if e, ok := h.(HookEnqueue); ok {
		r.enqueue = append(r.enqueue, e)
		run := composeHooks(r.enqueueHooks())
		r.enqueueRun.Store(&run)
		subscribed = true
	}
	if b, ok := h.(HookWorkBegin); ok {
		r.workBegin = append(r.workBegin, b)
		subscribed = true
	}
	if e, ok := h.(HookWorkEnd); ok {
		r.workEnd = append(r.workEnd, endSubscriber{e, inline})
		subscribed = true
	}
	return subscribed
}

// enqueueHooks is enqueue as EnqueueHooks: an EnqueueHook itself, any
// other subscriber's method.
func (r *hooks) enqueueHooks() []EnqueueHook {
	out := make([]EnqueueHook, len(r.enqueue))
	for i, e := range r.enqueue {
		if f, ok := e.(EnqueueHook); ok {
			out[i] = f
		} else {
			out[i] = e.Enqueue
		}
	}
	return out
}

// forWorker is what a worker runs with: the client's subscribers, then
// the worker's own (its middleware inside the client's, its ends after).
func (r *hooks) forWorker(mws []Middleware, ends ...endSubscriber) (Middleware, []endSubscriber) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := make([]Middleware, 0, len(r.workBegin)+len(mws))
	for _, b := range r.workBegin {
		if m, ok := b.(Middleware); ok {
			all = append(all, m)
		} else {
			all = append(all, b.WorkBegin)
		}
	}
	return chain(append(all, mws...)), append(append([]endSubscriber(nil), r.workEnd...), ends...)
}

// endSinks are the engine's sinks for subs: an inline subscriber itself,
// any other behind a jobEndHook, which hands it each end as open makes it
// (on the hook's goroutine, off the job's path); stop waits for those to
// see every end told before it.
func endSinks(subs []endSubscriber, open func(bananastype.JobEnd) bananastype.JobEnd, log *slog.Logger) (sinks []engine.JobEndSink, stop func()) {
	var queued []*jobEndHook
	for _, s := range subs {
		if s.inline {
			sinks = append(sinks, s.h)
			continue
		}
		told := s.h.JobEnded
		h := newJobEndHook(func(e bananastype.JobEnd) { told(open(e)) }, log)
		queued = append(queued, h)
		sinks = append(sinks, h)
	}
	return sinks, func() {
		for _, h := range queued {
			h.stop()
		}
	}
}

// EnqueueHook wraps every typed enqueue of a client (AddEnqueueHook; an
// EnqueueHook is a HookEnqueue, one of the client's hooks):
// Enqueue, EnqueueMany, Call's enqueue and a workflow's Enqueue, and the
// submissions of its Inspector (the HTTP API's and the CLI's), a batch as
// one call. It is the producer side's seam, as Middleware is the worker's:
// a tracer starts a span around next and writes its context into the
// jobs' headers (Enqueueing.SetHeader), a logger notes what went where.
// next stores the jobs, with ctx itself or a context derived from it;
// after it returns, Enqueueing.IDs holds their ids. The hook returns
// next's error, or its own to refuse the enqueue without calling next.
// next is called once, before the hook returns: a hook that returns nil
// without calling it makes the enqueue fail (nothing was stored), and a
// second call stores nothing and returns an error.
type EnqueueHook func(ctx context.Context, e *Enqueueing, next func(context.Context) error) error

// Enqueueing is one enqueue call as an EnqueueHook sees it.
type Enqueueing struct {
	Task  string // the task's name; for a workflow, its final step's; "" for a submitted batch of several tasks
	Route string // the route the jobs go to; "" for a workflow, whose steps each have theirs, and for a submitted batch over several routes
	Count int    // jobs (steps, for a workflow) the call stores: 1 for Enqueue and Call
	// Workflow: the call submits a workflow (Step.Enqueue); its headers go
	// to every step's job.
	Workflow bool
	// IDs are, once next has returned, the ids of the call's jobs in order
	// ("" for one not stored), or the workflow's id; a duplicate's is the
	// id of the job that holds its place.
	IDs []string

	headers map[string]string
}

// SetHeader sets a header on every job of the call, over a runtime.Header
// option of the same name. Names and values are checked when the jobs are
// encoded: an enqueue whose headers break queue.CheckHeaders fails with an
// error naming the header.
func (e *Enqueueing) SetHeader(key, value string) {
	if e.headers == nil {
		e.headers = map[string]string{}
	}
	e.headers[key] = value
}

// Header returns the header the call's hooks set under key so far.
func (e *Enqueueing) Header(key string) string { return e.headers[key] }

func composeHooks(hs []EnqueueHook) EnqueueHook {
	if len(hs) == 1 {
		return hs[0]
	}
	outer, inner := hs[0], composeHooks(hs[1:])
	return func(ctx context.Context, e *Enqueueing, next func(context.Context) error) error {
		return outer(ctx, e, func(ctx context.Context) error { return inner(ctx, e, next) })
	}
}

// jobEndBuffer is how many ends wait for a slow HookWorkEnd (OnJobEnd)
// before the next ones are dropped.
const jobEndBuffer = 1024

// jobEndHook calls a HookWorkEnd (WorkerOptions.OnJobEnd, a hook added by
// Client.AddHook) with every end its worker tells,
// in order, on a goroutine of its own: the engine hands an end over without
// waiting, so a slow hook delays only the hook. Past jobEndBuffer ends
// waiting, the next are dropped and the drop is logged.
type jobEndHook struct {
	f       func(bananastype.JobEnd)
	log     *slog.Logger
	mu      sync.RWMutex // held to send, and to close ends
	closed  bool
	ends    chan bananastype.JobEnd
	dropped atomic.Int64
	done    chan struct{}
}

func newJobEndHook(f func(bananastype.JobEnd), log *slog.Logger) *jobEndHook {
	h := &jobEndHook{f: f, log: log, ends: make(chan bananastype.JobEnd, jobEndBuffer), done: make(chan struct{})}
	go h.run()
	return h
}

// JobEnded queues e for the hook. An end told after the worker stopped
// (an ack answered after shutdown gave up waiting for it) is not.
func (h *jobEndHook) JobEnded(e bananastype.JobEnd) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return
	}
	select {
	case h.ends <- e:
	default:
		h.dropped.Add(1)
	}
}

func (h *jobEndHook) run() {
	defer close(h.done)
	for e := range h.ends {
		h.call(e)
		h.reportDrops()
	}
	h.reportDrops()
}

func (h *jobEndHook) call(e bananastype.JobEnd) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Error("bananas: a work-end hook (OnJobEnd, HookWorkEnd) panicked", "job", e.ID, "panic", v)
		}
	}()
	h.f(e)
}

func (h *jobEndHook) reportDrops() {
	if n := h.dropped.Swap(0); n > 0 {
		h.log.Warn("bananas: a work-end hook (OnJobEnd, HookWorkEnd) is slower than jobs end; ends dropped without calling it", "dropped", n, "buffer", jobEndBuffer)
	}
}

// stop waits for the hook to see every end queued, and queues no more.
func (h *jobEndHook) stop() {
	h.mu.Lock()
	h.closed = true
	close(h.ends)
	h.mu.Unlock()
	<-h.done
}
