package runtime

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/metrics"
)

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

// countEnds, the metrics' subscriber to the ends of runs (an inline
// HookWorkEnd of every client), counts the ends of a worker's runs in its
// client's metrics, those its reaper recovered included: the run was another worker's (or
// this one's, its failure unwritten), which did not count it, so each
// failed run is counted once, by whoever recorded its end.
type countEnds struct{ m *metrics.Set }

func (c countEnds) JobEnded(e bananastype.JobEnd) {
	s := c.m.For(e.Route, string(e.Priority), e.Task)
	switch e.Ending {
	case queue.EndCompleted:
		s.Succeeded()
	case queue.EndRetrying:
		s.Failed()
		s.Retried()
	case queue.EndDead:
		s.Failed()
		s.Dead()
	case queue.EndSnoozed:
		s.Snoozed()
	case queue.EndCanceled:
		s.Canceled()
	}
}

// engineMetrics is what the engine measures of its runs, in the client's
// metrics.
type engineMetrics struct{ *metrics.Set }

func (m engineMetrics) For(route, priority, task string) engine.RunMetrics {
	return m.Set.For(queue.ShardBase(route), priority, task)
}
