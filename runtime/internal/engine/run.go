package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/bananas-go/bananas/queue"
)

// run is one dispatched job on this worker.
type run struct {
	d     *queue.Dispatch
	ctx   *jobCtx               // the handler's context
	group *timeoutGroup         // the runs fetched with it that share its timeout, and so its deadline
	cause atomic.Pointer[error] // why the run was canceled, if it was
	// decided: its outcome is decided, by Exec's return or by its timeout,
	// whichever comes first.
	decided atomic.Bool
	// recording: its outcome is being recorded, or shutdown handed it
	// back: set once, by whichever comes first.
	recording atomic.Bool
	handedOn  bool       // its slot was handed on when Exec returned (slots.handOn)
	m         RunMetrics // its job's metrics, resolved once at start
	trail     string     // its Outcome.Trail, told with its end
}

// Causes with which a run's context is canceled when the job is no longer
// this worker's to finish: whatever Exec returns then is not recorded.
var (
	errLeaseLost  = errors.New("bananas: lease lost")
	errHandedBack = errors.New("bananas: handed back at shutdown")
	// errCanceled: an operator canceled the job (Inspector.Cancel); it is
	// recorded as canceled at once, without a retry.
	errCanceled = errors.New("bananas: job canceled")
)

// cancel ends r's context with cause recorded as the reason.
func (r *run) cancel(cause error) {
	r.cause.CompareAndSwap(nil, &cause)
	r.ctx.cancel(context.Canceled)
}

// canceled is the cause given to cancel, or nil.
func (r *run) canceled() error {
	if p := r.cause.Load(); p != nil {
		return *p
	}
	return nil
}

// runs is the set of runs in flight: those the renewer renews and shutdown
// waits for.
type runs struct {
	mu   sync.Mutex
	set  map[*run]struct{}
	idle chan struct{} // closed and replaced when set becomes empty
}

func newRuns() *runs { return &runs{set: map[*run]struct{}{}, idle: make(chan struct{})} }

func (rs *runs) track(r *run) {
	rs.mu.Lock()
	rs.set[r] = struct{}{}
	rs.mu.Unlock()
}

// untrack stops renewing r's lease; when nothing runs any more, idle is
// closed.
func (rs *runs) untrack(r *run) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, ok := rs.set[r]; !ok {
		return
	}
	delete(rs.set, r)
	if len(rs.set) == 0 {
		close(rs.idle)
		rs.idle = make(chan struct{})
	}
}

// byRoute returns the runs in flight grouped by route, and the idle channel
// to wait on for them to end.
func (rs *runs) byRoute() (map[string][]*run, chan struct{}) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := map[string][]*run{}
	for r := range rs.set {
		out[r.d.Route] = append(out[r.d.Route], r)
	}
	return out, rs.idle
}

// of returns the runs in flight of job id.
func (rs *runs) of(id string) []*run {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []*run
	for r := range rs.set {
		if r.d.ID == id {
			out = append(out, r)
		}
	}
	return out
}

// count is the number of runs in flight.
func (rs *runs) count() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.set)
}
