package queue

import (
	"context"
	"sync"
	"time"
)

// committer coalesces concurrent calls into few Redis calls per group (group
// commit). A call that finds a free flush slot goes out at once — no added
// latency at low load — and calls that arrive while every slot is busy join
// the next batch, which goes out as soon as a slot frees. Under load a batch
// holds every call that arrived during a round trip, so round trips per call
// fall as load rises, while a few flushes in flight keep Redis busy while the
// client handles replies.
type committer[In, Out any] struct {
	mu       sync.Mutex
	groups   map[string]*commitGroup[In, Out]
	inflight int // flushes in flight per group at most
	flush    func(ctx context.Context, group string, ins []In) ([]Out, error)
}

type commitGroup[In, Out any] struct {
	inflight int
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

func newCommitter[In, Out any](inflight int, flush func(context.Context, string, []In) ([]Out, error)) *committer[In, Out] {
	return &committer[In, Out]{groups: map[string]*commitGroup[In, Out]{}, inflight: inflight, flush: flush}
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
	if g.inflight < c.inflight {
		g.next = nil
		g.inflight++
		go c.run(group, g, b)
	}
	c.mu.Unlock()

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

// run flushes b, then whatever batch gathered meanwhile, until none waits.
func (c *committer[In, Out]) run(group string, g *commitGroup[In, Out], b *commitBatch[In, Out]) {
	for b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		b.outs, b.err = c.flush(ctx, group, b.ins)
		cancel()
		close(b.done)

		c.mu.Lock()
		b = g.next
		g.next = nil
		if b == nil {
			g.inflight--
		}
		c.mu.Unlock()
	}
}
