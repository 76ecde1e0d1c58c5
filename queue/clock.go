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

// SyncClock measures the offset of Redis's clock from the host's: TIME, taken
// as the middle of the round trip. It warns when the skew is over
// SkewWarning.
func (q *Queue) SyncClock(ctx context.Context) error {
	before := q.local()
	server, err := q.rdb.Time(ctx).Result()
	after := q.local()
	if err != nil {
		return fmt.Errorf("read the Redis server's clock: %w", err)
	}
	mid := before.Add(after.Sub(before) / 2)
	skew := server.Sub(mid)
	q.offset.Store(int64(skew))
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
