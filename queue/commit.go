package queue

import (
	"context"
	"sync"
	"time"
)

// committer coalesces concurrent calls into one Redis call per group (group
// commit): the first caller of an idle group flushes at once, alone — no
// added latency at low load — and callers that arrive while a flush is in
// flight join the next batch, which goes out as soon as that flush returns.
// Under load a batch therefore holds every call that arrived during one round
// trip, and the round trips per call fall with the load.
type committer[In, Out any] struct {
	mu     sync.Mutex
	groups map[string]*commitGroup[In, Out]
	flush  func(ctx context.Context, group string, ins []In) ([]Out, error)
}

type commitGroup[In, Out any] struct {
	flushing bool
	next     *commitBatch[In, Out]
}

type commitBatch[In, Out any] struct {
	ins  []In
	outs []Out
	err  error
	done chan struct{}
}

// flushTimeout bounds one coalesced Redis call (it serves many callers, so
// none of their contexts can bound it).
const flushTimeout = 10 * time.Second

func newCommitter[In, Out any](flush func(context.Context, string, []In) ([]Out, error)) *committer[In, Out] {
	return &committer[In, Out]{groups: map[string]*commitGroup[In, Out]{}, flush: flush}
}

// do adds in to the group's next batch and waits for that batch's outcome. If
// ctx ends first the call may still take effect (the batch is on its way).
func (c *committer[In, Out]) do(ctx context.Context, group string, in In) (Out, error) {
	c.mu.Lock()
	g := c.groups[group]
	if g == nil {
		g = &commitGroup[In, Out]{}
		c.groups[group] = g
	}
	if g.next == nil {
		g.next = &commitBatch[In, Out]{done: make(chan struct{})}
	}
	b := g.next
	idx := len(b.ins)
	b.ins = append(b.ins, in)
	lead := !g.flushing
	g.flushing = true
	c.mu.Unlock()

	if lead {
		go c.run(group, g)
	}
	select {
	case <-b.done:
		var zero Out
		if b.err != nil {
			return zero, b.err
		}
		return b.outs[idx], nil
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

// run flushes the group's batches until none is waiting.
func (c *committer[In, Out]) run(group string, g *commitGroup[In, Out]) {
	for {
		c.mu.Lock()
		b := g.next
		g.next = nil
		if b == nil {
			g.flushing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		b.outs, b.err = c.flush(ctx, group, b.ins)
		cancel()
		close(b.done)
	}
}
