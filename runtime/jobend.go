package runtime

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/metrics"
)

// JobEnd is what a worker tells WorkerOptions.OnJobEnd of a job's run that
// ended, once that end is recorded in Redis: one JobEnd per end, never one
// for an end whose write failed or came too late (its lease was lost, and
// the job is another run's).
type JobEnd struct {
	ID       string
	Task     string
	Route    string
	Priority Priority // empty for a recovered job whose stored form did not say
	// Status is where the end left the job:
	//   - StatusCompleted: the run succeeded; Result is its encoded result.
	//   - StatusScheduled: the job runs again at RetryAt, after a failure
	//     (Error), or because the run asked to (Snoozed: RetryAfter, no
	//     failure counted).
	//   - StatusFailed: the run failed for good; the job is dead-lettered.
	//   - StatusCanceled: the job was canceled while it ran, or while the
	//     fetch that leased it was lost (it never ran).
	//   - StatusPending: the worker stopped before the run ended; the job
	//     is back at the front of its queue, no attempt counted.
	Status  Status
	Snoozed bool
	RetryAt time.Time // StatusScheduled: when the job runs again
	// Attempt is the run's number: 1 for the first, one more after each
	// failed run.
	Attempt int
	// Error is the run's failure (StatusScheduled, StatusFailed), or why it
	// was canceled.
	Error string
	// StartedAt is when the run started (zero when Recovered); EndedAt when
	// its end was recorded, on the Redis server's clock.
	StartedAt, EndedAt time.Time
	// Result is the msgpack-encoded result of a completed run.
	Result []byte
	// Worker is the id of the worker that recorded the end (Worker.ID).
	Worker string
	// Recovered: the job's lease expired on the worker that ran it (it
	// crashed or lost Redis), and this worker recovered it: a retry, the
	// dead-letter queue, or canceled if a cancel was asked meanwhile.
	Recovered bool
}

// jobEndOf is the public view of e.
func jobEndOf(e engine.JobEnd) JobEnd {
	out := JobEnd{
		ID: e.ID, Task: e.Task, Route: queue.ShardBase(e.Route), Priority: e.Priority, RetryAt: e.RetryAt,
		Attempt: e.Attempt, Error: e.Error, StartedAt: e.StartedAt, EndedAt: e.EndedAt,
		Result: e.Result, Worker: e.Worker, Recovered: e.Recovered,
	}
	switch e.Ending {
	case queue.EndCompleted:
		out.Status = StatusCompleted
	case queue.EndRetrying:
		out.Status = StatusScheduled
	case queue.EndSnoozed:
		out.Status, out.Snoozed = StatusScheduled, true
	case queue.EndDead:
		out.Status = StatusFailed
	case queue.EndCanceled:
		out.Status = StatusCanceled
	case queue.EndHandedBack:
		out.Status = StatusPending
	}
	return out
}

// jobEndBuffer is how many ends wait for a slow OnJobEnd before the next
// ones are dropped.
const jobEndBuffer = 1024

// jobEndHook calls WorkerOptions.OnJobEnd with every end its worker tells,
// in order, on a goroutine of its own: the engine hands an end over without
// waiting, so a slow hook delays only the hook. Past jobEndBuffer ends
// waiting, the next are dropped and the drop is logged.
type jobEndHook struct {
	f       func(JobEnd)
	log     *slog.Logger
	mu      sync.RWMutex // held to send, and to close ends
	closed  bool
	ends    chan engine.JobEnd
	dropped atomic.Int64
	done    chan struct{}
}

func newJobEndHook(f func(JobEnd), log *slog.Logger) *jobEndHook {
	h := &jobEndHook{f: f, log: log, ends: make(chan engine.JobEnd, jobEndBuffer), done: make(chan struct{})}
	go h.run()
	return h
}

// JobEnded queues e for the hook. An end told after the worker stopped
// (an ack answered after shutdown gave up waiting for it) is not.
func (h *jobEndHook) JobEnded(e engine.JobEnd) {
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

func (h *jobEndHook) call(e engine.JobEnd) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Error("bananas: OnJobEnd panicked", "job", e.ID, "panic", v)
		}
	}()
	h.f(jobEndOf(e))
}

func (h *jobEndHook) reportDrops() {
	if n := h.dropped.Swap(0); n > 0 {
		h.log.Warn("bananas: OnJobEnd is slower than jobs end; ends dropped without calling it", "dropped", n, "buffer", jobEndBuffer)
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

// countEnds counts the ends of a worker's runs in its client's metrics,
// those its reaper recovered included: the run was another worker's (or
// this one's, its failure unwritten), which did not count it, so each
// failed run is counted once, by whoever recorded its end.
type countEnds struct{ m *metrics.Set }

func (c countEnds) JobEnded(e engine.JobEnd) {
	s := c.m.For(queue.ShardBase(e.Route), string(e.Priority), e.Task)
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
