package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// A step of the host's wall clock (NTP, an operator) moves neither the
// queue's time nor what the next sync measures: the queue's time is Redis's,
// advanced by the monotonic clock. Only Skew, the wall clock's offset from
// Redis's, shows the step once a sync has measured it.
func TestClock_AWallClockStepMovesNeitherNowNorTheNextSync(t *testing.T) {
	t.Parallel()
	rdb := redistest.Shared(t).Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	var step atomic.Int64
	q.UseLocalClock(func() time.Time { return time.Now().Add(time.Duration(step.Load())) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.SyncClock(ctx); err != nil {
		t.Fatal(err)
	}
	// within: how far apart two readings of one instant may be (round trips
	// and scheduling on a loaded machine), far below a step.
	const within = time.Second
	near := func(what string, got, want time.Time) {
		t.Helper()
		if d := got.Sub(want); d > within || d < -within {
			t.Fatalf("%s = %s, %s off %s; a wall clock step moved it", what, got.Format(time.RFC3339Nano), d, want.Format(time.RFC3339Nano))
		}
	}
	for _, s := range []time.Duration{60 * time.Second, -60 * time.Second} {
		before := q.Now()
		step.Store(int64(s))
		near("Now right after a step of "+s.String(), q.Now(), before)
		if err := q.SyncClock(ctx); err != nil {
			t.Fatal(err)
		}
		server, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		near("Now after the sync that follows a step of "+s.String(), q.Now(), server)
		if skew := q.Skew(); skew > -s+within || skew < -s-within {
			t.Fatalf("Skew after a step of %s = %s; want about %s (the wall clock's offset)", s, skew, -s)
		}
		step.Store(0)
		if err := q.SyncClock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A host suspended (a laptop closed, a VM paused) comes back with its
// monotonic clock behind the wall clock and Redis's by the suspension: the
// clock sync notices the two host clocks moved apart and reads Redis's clock
// again within about a second, not at its next 30 s turn.
func TestClock_AHostBackFromASuspensionCatchesUpWithinASecond(t *testing.T) {
	t.Parallel()
	rdb := redistest.Shared(t).Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	var suspended atomic.Int64 // how long the monotonic clock stood still
	origin := time.Now()
	q.UseMonotonicClock(func() time.Duration { return time.Since(origin) - time.Duration(suspended.Load()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := q.SyncClock(ctx); err != nil {
		t.Fatal(err)
	}
	go (&queue.ClockSync{Queue: q}).Run(ctx)
	suspended.Store(int64(10 * time.Second))
	behind := func() time.Duration {
		server, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return server.Sub(q.Now())
	}
	if b := behind(); b < 9*time.Second {
		t.Fatalf("right after a 10 s suspension Now is %s behind Redis; want about 10 s", b)
	}
	deadline := time.Now().Add(3 * time.Second)
	for b := behind(); b > 500*time.Millisecond || b < -500*time.Millisecond; b = behind() {
		if time.Now().After(deadline) {
			t.Fatalf("Now still %s off Redis 3 s after the host came back from a suspension", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
