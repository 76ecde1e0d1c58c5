package runtime

import (
	"context"
	"fmt"
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

// AddHook subscribes h to each operation whose interface it implements:
// HookEnqueue (the client's enqueues, inside the hooks added before it),
// HookWorkBegin (the runs of the client's workers, outside their
// WorkerOptions.Middleware) and HookWorkEnd (the ends of their runs). A
// tracer that follows both sides is one hook. Add hooks at start: an
// enqueue already under way runs the hooks of when it began, and a worker
// takes the client's hooks when it starts to Run. It panics when h
// implements none of the three.
func (c *Client) AddHook(h any) {
	if !c.hooks.add(h, false) {
		panic(fmt.Sprintf("bananas: AddHook(%T): it implements none of HookEnqueue, HookWorkBegin, HookWorkEnd", h))
	}
}

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
// any other behind a jobEndHook; stop waits for those to see every end
// told before it.
func endSinks(subs []endSubscriber, log *slog.Logger) (sinks []engine.JobEndSink, stop func()) {
	var queued []*jobEndHook
	for _, s := range subs {
		if s.inline {
			sinks = append(sinks, s.h)
			continue
		}
		h := newJobEndHook(s.h.JobEnded, log)
		queued = append(queued, h)
		sinks = append(sinks, h)
	}
	return sinks, func() {
		for _, h := range queued {
			h.stop()
		}
	}
}
