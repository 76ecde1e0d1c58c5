package queue

import (
	"context"
	"fmt"
	"time"
)

// The one clock. Lease deadlines, run-at times, reap and promote decisions
// are compared across hosts: a deadline set from one host's clock is judged
// by another's. Judged on local clocks, a host whose clock runs ahead by more
// than the slack between renewals (a third of the lease) reaps leases that
// are being renewed, and runs their jobs a second time. So every time the
// queue writes or compares is Redis's: read off the server's TIME at a sync
// (SyncClock, at connect and every 30 s), and advanced from there by the
// host's monotonic clock. The host's wall clock takes no part: a step of it
// (NTP, an operator, a VM resumed) between two syncs would otherwise move
// every deadline this host writes or judges by the size of the step — a
// step ahead on a host that only reaps reaps every healthy lease, a step
// back on a host running jobs lets their leases lapse. Scripts are still
// given the time as an argument rather than calling TIME themselves, so that
// the embedded server and Redis agree.

// SkewWarning is the offset between a host's clock and Redis's above which
// the queue warns (see OnWarning): leases and schedules are right either
// way, but the host's own logs and timestamps are off by that much.
const SkewWarning = time.Second

// clockAnchor is Redis's clock at one instant of the host's monotonic clock.
type clockAnchor struct {
	server time.Time     // Redis's clock then, without a monotonic reading
	at     time.Duration // the host's monotonic clock then (Queue.mono)
	skew   time.Duration // Redis's clock minus the host's wall clock then
	synced bool          // measured by SyncClock, not assumed from the wall clock
}

// processStart is the origin of the default monotonic clock: time.Since
// reads the monotonic part of both instants, which wall steps do not move.
var processStart = time.Now()

func sinceStart() time.Duration { return time.Since(processStart) }

// Now is the current time on Redis's clock, as this host best knows it: the
// server's time at the last sync plus the monotonic time since.
func (q *Queue) Now() time.Time {
	a := q.anchor.Load()
	return a.server.Add(q.mono() - a.at)
}

// Skew is the offset of Redis's clock from this host's wall clock as
// measured at the last sync: positive when this host's clock is behind.
func (q *Queue) Skew() time.Duration { return q.anchor.Load().skew }

// anchorAtWall takes the wall clock for Redis's until a sync measures it.
func (q *Queue) anchorAtWall() {
	q.anchor.Store(&clockAnchor{server: q.wall().Round(0), at: q.mono()})
}

// UseLocalClock sets the host's wall clock (time.Now by default), which only
// Skew and the skew warning read; before the first sync, Now starts from it.
// Tests of a skewed or stepped host clock set one of their own.
func (q *Queue) UseLocalClock(wall func() time.Time) {
	q.wall = wall
	if !q.anchor.Load().synced {
		q.anchorAtWall()
	}
}

// UseMonotonicClock sets the host's monotonic clock, the time elapsed since
// an arbitrary origin (by default the monotonic reading of time.Since), by
// which Now advances between syncs. Call it before the queue is used.
func (q *Queue) UseMonotonicClock(elapsed func() time.Duration) {
	q.mono = elapsed
	if !q.anchor.Load().synced {
		q.anchorAtWall()
	}
}

// clockSamples is how many TIME round trips SyncClock takes; the quickest
// one is used. maxClockRTT bounds the round trip of a sample worth keeping:
// the time read off a sample is wrong by up to half its round trip, and a
// slow one (a stalled connection, go-redis retrying) would be kept for the
// next 30 s.
const (
	clockSamples  = 3
	quickClockRTT = time.Millisecond
	maxClockRTT   = 200 * time.Millisecond
)

// SyncClock reads Redis's clock: TIME, taken as the middle (on the host's
// monotonic clock) of the quickest of a few round trips, which Now then
// advances from. A measurement whose every round trip was slower than
// maxClockRTT is not kept (unless none was ever kept) and is an error. It
// warns when the host's wall clock is off Redis's by over SkewWarning.
func (q *Queue) SyncClock(ctx context.Context) error {
	var best clockAnchor
	var rtt time.Duration
	// A first round trip as quick as a local one is kept alone: more
	// samples could not make it much better, and every client of every
	// process syncs, idle workers included.
	for i := 0; i < clockSamples && (i == 0 || rtt > quickClockRTT); i++ {
		before := q.mono()
		server, err := q.rdb.Time(ctx).Result()
		after := q.mono()
		if err != nil {
			return fmt.Errorf("read the Redis server's clock: %w", err)
		}
		if r := after - before; i == 0 || r < rtt {
			best, rtt = clockAnchor{server: server.Round(0), at: before + r/2, synced: true}, r
		}
	}
	if rtt > maxClockRTT && q.anchor.Load().synced {
		return fmt.Errorf("read the Redis server's clock: round trips of %s and more, too slow to trust; kept the last measurement", rtt.Round(time.Millisecond))
	}
	// The wall clock at the sample's middle, for Skew alone.
	wall, mono := q.wall(), q.mono()
	best.skew = best.server.Sub(wall.Add(best.at - mono))
	q.anchor.Store(&best)
	if best.skew > SkewWarning || best.skew < -SkewWarning {
		q.warn("bananas: this host's clock differs from the Redis server's; leases and schedules use the server's", "skew", best.skew.Round(time.Millisecond))
	}
	return nil
}

// clockDivergence is how far the host's wall clock may move from where its
// monotonic clock says it should be, since the last sync, before ClockSync
// syncs at once rather than at its next turn.
const clockDivergence = time.Second

// clockDiverged reports whether the host's wall and monotonic clocks have
// moved apart by over clockDivergence since the last sync: the wall clock
// was stepped (harmless: a sync finds Redis's clock where Now has it), or
// the host was suspended, which stops the monotonic clock while the wall
// clock and Redis's go on, and leaves Now behind by the suspension.
func (q *Queue) clockDiverged() bool {
	a := q.anchor.Load()
	if !a.synced {
		return false
	}
	wallThen := a.server.Add(-a.skew)
	d := q.wall().Sub(wallThen) - (q.mono() - a.at)
	return d > clockDivergence || d < -clockDivergence
}

// ClockSync keeps a queue's reading of Redis's clock fresh: the host's
// monotonic clock, which Now advances by between syncs, drifts from the
// server's (a few ppm), and stands still while the host is suspended.
type ClockSync struct {
	Queue *Queue
	Every time.Duration // default 30s
	// Check is how often the host's wall and monotonic clocks are compared
	// (default 1s): when they have moved apart by over a second since the
	// last sync (a suspension, a wall clock step), it syncs at once.
	Check time.Duration
	// OnError is told of failed measurements (optional); the last one
	// stays in use.
	OnError func(error)
}

// Run measures Redis's clock every Every, and whenever the host's clocks
// move apart, until ctx ends.
func (s *ClockSync) Run(ctx context.Context) {
	every, check := s.Every, s.Check
	if every <= 0 {
		every = 30 * time.Second
	}
	if check <= 0 {
		check = time.Second
	}
	t := time.NewTicker(min(check, every))
	defer t.Stop()
	// A sync in turn falls on the process's beat (see beat.go).
	due := time.NewTimer(UntilBeat(every))
	defer due.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !s.Queue.clockDiverged() {
				continue
			}
		case <-due.C:
		}
		due.Reset(UntilBeat(every))
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.Queue.SyncClock(cctx)
		cancel()
		if err != nil && ctx.Err() == nil && s.OnError != nil {
			s.OnError(err)
		}
	}
}
