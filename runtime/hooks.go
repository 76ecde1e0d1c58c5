package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// AddEnqueueHook adds h to the hooks around the client's enqueues, inside
// those added before it: AddHook(h). Add hooks before the client enqueues
// (at start, as otelbananas.Instrument does): an enqueue already under way
// runs the hooks of when it began.
func (c *Client) AddEnqueueHook(h EnqueueHook) {
	if h == nil {
		panic("bananas: AddEnqueueHook(nil)")
	}
	c.AddHook(h)
}

// hooked runs do inside the client's hooks for e, or alone when it has
// none; do gets cfg with the hooks' headers.
func (c *Client) hooked(ctx context.Context, e *Enqueueing, cfg jobConfig, do func(context.Context, jobConfig) error) error {
	run := c.hooks.enqueueRun.Load()
	if run == nil {
		return do(ctx, cfg)
	}
	// A hook that skips next, or calls it twice, would lose the jobs behind a
	// nil error or store them twice: both are errors instead.
	var called atomic.Bool
	err := (*run)(ctx, e, func(ctx context.Context) error {
		if called.Swap(true) {
			return errNextTwice
		}
		cfg.headers = withHeaders(cfg.headers, e.headers)
		return do(ctx, cfg)
	})
	if err == nil && !called.Load() {
		return errNextSkipped
	}
	return err
}

var (
	errNextTwice   = errors.New("bananas: an EnqueueHook called next a second time: that call enqueued nothing (call next once)")
	errNextSkipped = errors.New("bananas: an EnqueueHook returned nil without calling next: nothing was enqueued (call next, or return an error to refuse the enqueue)")
)

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
