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
// queue writes or compares is Redis's: the host's clock plus an offset to the
// server's TIME, measured at connect and refreshed (ClockSync). Scripts are
// still given the time as an argument rather than calling TIME themselves,
// so that the embedded server and Redis agree.

// SkewWarning is the offset between a host's clock and Redis's above which
// the queue warns (see OnWarning): leases and schedules are right either
// way, but the host's own logs and timestamps are off by that much.
const SkewWarning = time.Second

// Now is the current time on Redis's clock, as this host best knows it.
func (q *Queue) Now() time.Time {
	return q.local().Add(time.Duration(q.offset.Load()))
}

// Skew is the measured offset of Redis's clock from this host's: positive
// when this host's clock is behind.
func (q *Queue) Skew() time.Duration { return time.Duration(q.offset.Load()) }

// UseLocalClock sets the host clock the queue reads (time.Now by default),
// which SyncClock then offsets to Redis's. Tests of clock skew set a skewed
// one.
func (q *Queue) UseLocalClock(now func() time.Time) { q.local = now }

// clockSamples is how many TIME round trips SyncClock takes; the quickest
// one is used. maxClockRTT bounds the round trip of a sample worth keeping:
// the offset read off a sample is wrong by up to half its round trip, and a
// slow one (a stalled connection, go-redis retrying) would be kept for the
// next 30 s.
const (
	clockSamples = 3
	maxClockRTT  = 200 * time.Millisecond
)

// SyncClock measures the offset of Redis's clock from the host's: TIME, taken
// as the middle of the quickest of a few round trips. A measurement whose
// every round trip was slower than maxClockRTT is not kept (unless none was
// ever kept) and is an error. It warns when the skew is over SkewWarning.
func (q *Queue) SyncClock(ctx context.Context) error {
	var skew, rtt time.Duration
	for i := range clockSamples {
		before := q.local()
		server, err := q.rdb.Time(ctx).Result()
		after := q.local()
		if err != nil {
			return fmt.Errorf("read the Redis server's clock: %w", err)
		}
		if r := after.Sub(before); i == 0 || r < rtt {
			skew, rtt = server.Sub(before.Add(r/2)), r
		}
	}
	if rtt > maxClockRTT && q.synced.Load() {
		return fmt.Errorf("read the Redis server's clock: round trips of %s and more, too slow to trust; kept the last offset", rtt.Round(time.Millisecond))
	}
	q.offset.Store(int64(skew))
	q.synced.Store(true)
	if skew > SkewWarning || skew < -SkewWarning {
		q.warn("bananas: this host's clock differs from the Redis server's; leases and schedules use the server's", "skew", skew.Round(time.Millisecond))
	}
	return nil
}

// ClockSync keeps a queue's clock offset fresh: a host's clock can be
// stepped (NTP) or drift while it runs.
type ClockSync struct {
	Queue *Queue
	Every time.Duration // default 30s
	// OnError is told of failed measurements (optional); the last offset
	// stays in use.
	OnError func(error)
}

// Run measures the offset every Every until ctx ends.
func (s *ClockSync) Run(ctx context.Context) {
	every := s.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.Queue.SyncClock(cctx)
		cancel()
		if err != nil && ctx.Err() == nil && s.OnError != nil {
			s.OnError(err)
		}
	}
}
