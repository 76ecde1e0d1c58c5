package runtime

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"

	"github.com/bananas-go/bananas/queue"
)

// EnqueueHook wraps every typed enqueue of a client (AddEnqueueHook; an
// EnqueueHook is a HookEnqueue, one of the client's hooks, hookreg.go):
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

// withHeaders is headers with over's over them: a new map, as a job's
// headers may be shared with its task's defaults or its template; headers
// itself when over is empty.
func withHeaders(headers, over map[string]string) map[string]string {
	if len(over) == 0 {
		return headers
	}
	h := make(map[string]string, len(headers)+len(over))
	maps.Copy(h, headers)
	maps.Copy(h, over)
	return h
}

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

func composeHooks(hs []EnqueueHook) EnqueueHook {
	if len(hs) == 1 {
		return hs[0]
	}
	outer, inner := hs[0], composeHooks(hs[1:])
	return func(ctx context.Context, e *Enqueueing, next func(context.Context) error) error {
		return outer(ctx, e, func(ctx context.Context) error { return inner(ctx, e, next) })
	}
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

// Header sets a header the job carries beside its args: its handler reads
// it in Job.Headers (CurrentJob), middleware in the Job it is given. A job
// carries at most queue.MaxHeaders headers of printable-ASCII names; see
// queue.CheckHeaders for the sizes.
func Header(key, value string) Option {
	return func(c *jobConfig) {
		if err := queue.CheckHeaderKey(key); err != nil {
			c.fail("runtime.Header: %v", err)
			return
		}
		c.headers = withHeaders(c.headers, map[string]string{key: value})
	}
}
