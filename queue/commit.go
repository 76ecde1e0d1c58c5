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
// fall as load rises.
//
// A call that goes out alone is flushed on its caller's goroutine, under its
// caller's context (it would only wait otherwise): at low load no goroutine
// is started and woken per call, and on a small machine every wake-up of an
// idle thread is CPU that Redis, sharing the cores, does not get. A batch of
// several calls is flushed on a goroutine of its own, under its own timeout,
// so that every caller can stop waiting when its context ends; acks
// (doAsync), which wait for nobody, are flushed by the call that completes
// the batch.
//
// With linger set, a batch also waits for the callers just answered: a flush
// that carried n calls expects them back (closed-loop producers enqueue again
// as soon as they are answered), so the next batch goes out when it holds as
// many calls as the last round, or after linger, whichever comes first
// (rounds of fewer than lingerMin calls do not wait).
// Sixteen producers then share one call per round instead of two
// (one with the first caller back, one with the other fifteen), which halves
// the round trips and system calls per job. A batch that linger cut short
// lowers the expectation to what it held.
type committer[K comparable, In, Out any] struct {
	mu       sync.Mutex
	groups   map[K]*commitGroup[In, Out]
	inflight int           // flushes in flight per group at most
	linger   time.Duration // 0: never wait for more calls (see above)
	flush    func(ctx context.Context, group K, ins []In) ([]Out, error)
}

type commitGroup[In, Out any] struct {
	inflight int
	next     *commitBatch[In, Out]
	expect   int // calls the next batch waits for (linger only)
}

type commitBatch[In, Out any] struct {
	ins   []In
	cbs   []func(Out, error) // by call: how to answer a caller that does not wait (doAsync); nil for one that does
	outs  []Out
	err   error
	done  chan struct{}
	timer *time.Timer // the linger deadline, once armed
}

// lingerMin is the smallest expectation worth waiting for. Under open-loop
// load (independent requests that each enqueue once) the callers answered do
// not come back, and a batch would wait out the linger for them; needing a
// round of at least four keeps that cost to loads where four enqueues overlap
// one round trip, far above the paced traffic of a latency-sensitive service.
const lingerMin = 4

// flushTimeout bounds one coalesced Redis call (it serves many callers, so
// none of their contexts can bound it).
const flushTimeout = 10 * time.Second

func newCommitter[K comparable, In, Out any](inflight int, linger time.Duration, flush func(context.Context, K, []In) ([]Out, error)) *committer[K, In, Out] {
	return &committer[K, In, Out]{groups: map[K]*commitGroup[In, Out]{}, inflight: inflight, linger: linger, flush: flush}
}

// do adds in to the group's next batch and waits for that batch's outcome, or
// for ctx to end: then the call may still take effect (the batch is on its
// way).
func (c *committer[K, In, Out]) do(ctx context.Context, group K, in In) (Out, error) {
	g, b, idx, lead := c.join(group, in, nil)
	if lead {
		// A batch of the caller's call alone goes out under the caller's
		// context, on the caller's goroutine. A batch that serves others
		// goes out under its own timeout, on a goroutine of its own, and
		// the caller waits for it like the others: so no call outlasts its
		// context.
		if len(b.ins) == 1 {
			c.flushBatch(ctx, group, g, b)
			return b.outcome(idx)
		}
		go c.flushBatch(context.Background(), group, g, b)
	}
	select {
	case <-b.done:
		return b.outcome(idx)
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

// doAsync adds in to the group's next batch like do, but does not wait for
// the outcome: done is called with it, on the goroutine that completes the
// batch, which may be this one (when it flushes the batch itself). done must
// not block.
func (c *committer[K, In, Out]) doAsync(group K, in In, done func(Out, error)) {
	if g, b, _, lead := c.join(group, in, done); lead {
		c.flushBatch(context.Background(), group, g, b)
	}
}

// join adds in (and, for doAsync, its done) to the group's next batch and
// reports its index there, and whether the caller must flush the batch now
// (it is taken: see takeLocked).
func (c *committer[K, In, Out]) join(group K, in In, done func(Out, error)) (*commitGroup[In, Out], *commitBatch[In, Out], int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		g = &commitGroup[In, Out]{}
		c.groups[group] = g
	}
	if g.next == nil {
		// Sized for the calls expected (see linger): growing a slice of
		// large structs call by call costs a fifth of a producer's
		// allocation.
		g.next = &commitBatch[In, Out]{ins: make([]In, 0, max(g.expect, 1)), done: make(chan struct{})}
	}
	b := g.next
	idx := len(b.ins)
	b.ins = append(b.ins, in)
	if done != nil {
		if b.cbs == nil {
			b.cbs = make([]func(Out, error), 0, cap(b.ins))
		}
		b.cbs = append(b.cbs, make([]func(Out, error), idx-len(b.cbs))...)
		b.cbs = append(b.cbs, done)
	}
	lead := c.readyLocked(group, g, b)
	if lead {
		c.takeLocked(g, b)
	}
	return g, b, idx, lead
}

// answer tells b's callers its outcome, set on b: those waiting through
// done, the others through their callbacks.
func (b *commitBatch[In, Out]) answer() {
	close(b.done)
	for i, cb := range b.cbs {
		if cb != nil {
			cb(b.outcome(i))
		}
	}
}

// outcome is call idx's answer once b.done is closed.
func (b *commitBatch[In, Out]) outcome(idx int) (Out, error) {
	if b.err != nil {
		var zero Out
		return zero, b.err
	}
	return b.outs[idx], nil
}

// readyLocked reports whether b, the group's next batch, may go out now; when
// it must linger it arms b's deadline.
func (c *committer[K, In, Out]) readyLocked(group K, g *commitGroup[In, Out], b *commitBatch[In, Out]) bool {
	if g.inflight >= c.inflight {
		return false // the flush that frees a slot takes b
	}
	if c.linger <= 0 || len(b.ins) >= g.expect || g.expect < lingerMin {
		return true
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(c.linger, func() { c.expire(group, g, b) })
	}
	return false
}

// expire sends b when its linger ends before enough calls joined it.
func (c *committer[K, In, Out]) expire(group K, g *commitGroup[In, Out], b *commitBatch[In, Out]) {
	c.mu.Lock()
	// A lingering batch is the group's next with a free slot (readyLocked
	// arms the deadline only then, and only takeLocked fills a slot, with
	// the next batch), so unless a caller took b meanwhile it goes now.
	send := g.next == b
	if send {
		c.takeLocked(g, b) // its flush sets the next expectation from what it held
	}
	c.mu.Unlock()
	if send {
		c.run(group, g, b)
	}
}

// takeLocked makes b a flush in flight.
func (c *committer[K, In, Out]) takeLocked(g *commitGroup[In, Out], b *commitBatch[In, Out]) {
	if b.timer != nil {
		b.timer.Stop()
	}
	g.next = nil
	g.inflight++
}

// flushBatch flushes b, taken by takeLocked, and hands what gathered meanwhile
// to a goroutine of its own when it may go out (the caller has its answer).
func (c *committer[K, In, Out]) flushBatch(parent context.Context, group K, g *commitGroup[In, Out], b *commitBatch[In, Out]) {
	if nb := c.flushOne(parent, group, g, b); nb != nil {
		go c.run(group, g, nb)
	}
}

// run flushes b, then every batch that is ready when the previous one ends.
func (c *committer[K, In, Out]) run(group K, g *commitGroup[In, Out], b *commitBatch[In, Out]) {
	for b != nil {
		b = c.flushOne(context.Background(), group, g, b)
	}
}

// flushOne flushes b under parent, for at most flushTimeout, and returns the
// next batch if it is ready to go out (taken, so the caller must flush it),
// or nil.
func (c *committer[K, In, Out]) flushOne(parent context.Context, group K, g *commitGroup[In, Out], b *commitBatch[In, Out]) *commitBatch[In, Out] {
	ctx, cancel := context.WithTimeout(parent, flushTimeout)
	b.outs, b.err = c.flush(ctx, group, b.ins)
	cancel()
	return c.complete(group, g, b)
}

// complete answers b's callers with the outcome set on b and returns the next
// batch if it is ready to go out (taken, so the caller must flush it), or nil.
func (c *committer[K, In, Out]) complete(group K, g *commitGroup[In, Out], b *commitBatch[In, Out]) *commitBatch[In, Out] {
	// Answer after unlocking: closing done readies every caller of b, and
	// callers that another thread runs at once would otherwise find the
	// lock still held and park on it (an execution trace shows it once per
	// flush of sixteen enqueues).
	defer b.answer()
	c.mu.Lock()
	defer c.mu.Unlock()
	// Count before answering: once b.done is closed, b's callers may rejoin
	// the next batch and would be counted twice.
	g.inflight--
	nb := g.next
	waiting := 0
	if nb != nil {
		waiting = len(nb.ins)
	}
	// The callers about to be answered come back to join those waiting.
	g.expect = len(b.ins) + waiting
	if nb == nil {
		return nil
	}
	if !c.readyLocked(group, g, nb) {
		return nil
	}
	c.takeLocked(g, nb)
	return nb
}

// ride takes the group's waiting calls, if any, so that another Redis call
// about to go out to the same place carries them in its round trip (acks
// riding on a fetch: see Jobs.Fetch). It returns nil when no call waits.
// The taken batch counts as a flush in flight until finish answers it.
func (c *committer[K, In, Out]) ride(group K) *rider[K, In, Out] {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil || g.next == nil {
		return nil
	}
	b := g.next
	c.takeLocked(g, b)
	return &rider[K, In, Out]{c: c, group: group, g: g, b: b}
}

// rider is a batch taken by ride.
type rider[K comparable, In, Out any] struct {
	c     *committer[K, In, Out]
	group K
	g     *commitGroup[In, Out]
	b     *commitBatch[In, Out]
}

// ins are the calls the rider carries.
func (r *rider[K, In, Out]) ins() []In { return r.b.ins }

// finish answers the rider's calls with the outcome of the call that carried
// them: one out per call, as flush returns them, or an error for all.
func (r *rider[K, In, Out]) finish(outs []Out, err error) {
	r.b.outs, r.b.err = outs, err
	if nb := r.c.complete(r.group, r.g, r.b); nb != nil {
		go r.c.run(r.group, r.g, nb)
	}
}
