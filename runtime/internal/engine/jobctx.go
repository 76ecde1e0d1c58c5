package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// jobCtx is the context a handler receives: the job's deadline, the job's
// value under the runtime's key (runtime.CurrentJob), and cancellation by the
// worker. It stands for a context.WithTimeout and a context.WithValue per
// job: the deadline is enforced by one timer per fetched batch
// (timeoutGroup), not one per job, as two timers per job (a context's and a
// timeout watchdog's) cost a tenth of a busy worker's CPU.
//
// It implements AfterFunc, so contexts a handler derives from it
// (context.WithTimeout(ctx, ...) around a call) register with it directly, as
// with the standard library's own contexts, instead of each starting a
// goroutine to watch Done.
type jobCtx struct {
	deadline time.Time
	key, val any // the job's value (Config.JobKey, Config.JobValue)
	id       string
	done     chan struct{}

	mu     sync.Mutex
	err    error
	afters map[*afterFunc]struct{}
}

var _ context.Context = (*jobCtx)(nil)

type afterFunc struct{ f func() }

func newJobCtx(deadline time.Time, id string, key, val any) *jobCtx {
	return &jobCtx{deadline: deadline, id: id, key: key, val: val, done: make(chan struct{})}
}

func (c *jobCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *jobCtx) Done() <-chan struct{}       { return c.done }

func (c *jobCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *jobCtx) Value(key any) any {
	if key == c.key {
		return c.val
	}
	return nil
}

func (c *jobCtx) String() string { return "bananas job context of " + c.id }

// cancel ends the context with err (context.DeadlineExceeded or
// context.Canceled); the first call wins.
func (c *jobCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for a := range afters {
		go a.f()
	}
}

// AfterFunc arranges for f to run in its own goroutine once c is done (at
// once if it is); stop unregisters f and reports whether it did so before f
// was started. The context package uses this method for children of c.
func (c *jobCtx) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.afters == nil {
		c.afters = map[*afterFunc]struct{}{}
	}
	c.afters[a] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.afters[a]; !ok {
			return false
		}
		delete(c.afters, a)
		return true
	}
}

// timeoutGroup is the runs of one fetch that share a timeout: they start
// together, so they share a deadline and one timer, which times out those
// whose outcome is not decided when it fires and is stopped when the last
// one ends (executor.end: its outcome recorded or dropped).
type timeoutGroup struct {
	timeout time.Duration
	timer   *time.Timer
	runs    []*run
	left    atomic.Int32
}

// ended is called once per run of g, when the run ends (executor.end).
func (g *timeoutGroup) ended() {
	if g.left.Add(-1) == 0 {
		g.timer.Stop()
	}
}
