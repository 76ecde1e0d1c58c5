package scheduler_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// One of two schedulers' hosts has its clocks stepped: its wall clock an
// hour ahead, and its monotonic clock 5 s ahead (a host back from a
// suspension, until its next sync with Redis's clock), so for a while it
// fires ticks early. Each tick is still enqueued once, in order, and none
// is lost (catch_up).
func TestSchedules_AClockStepOnOneSchedulerFiresNoTickTwiceAndLosesNone(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	rdb := srv.Client(t)
	ns := redistest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	honest, err := queue.New(rdb, ns)
	if err != nil {
		t.Fatal(err)
	}
	stepped, err := queue.New(rdb, ns)
	if err != nil {
		t.Fatal(err)
	}
	var wallStep, monoStep atomic.Int64
	start := time.Now()
	stepped.UseLocalClock(func() time.Time { return time.Now().Add(time.Duration(wallStep.Load())) })
	stepped.UseMonotonicClock(func() time.Duration { return time.Since(start) + time.Duration(monoStep.Load()) })
	for _, q := range []*queue.Queue{honest, stepped} {
		if err := q.SyncClock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s := &scheduler.Schedules{Queue: honest}
	const n = 4
	for i := range n {
		d := def(t, fmt.Sprintf("c%d", i), fmt.Sprintf("rc%d", i))
		d.CatchUp = time.Minute
		if _, err := s.Put(ctx, d, honest.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var stops []func()
	for _, q := range []*queue.Queue{honest, stepped} {
		stops = append(stops, runRunner(t, &scheduler.ScheduleRunner{Schedules: &scheduler.Schedules{Queue: q}, Safety: 50 * time.Millisecond,
			OnError: func(id string, err error) { t.Errorf("schedule %s: %v", id, err) }}))
	}
	fired := func(id string) int64 { return get(t, s, id).Fired }
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		waitUntil(t, ctx, id+" fired twice", func() bool { return fired(id) >= 2 })
	}
	// The step: the stepped host now believes it is 5 s later than it is.
	wallStep.Store(int64(time.Hour))
	monoStep.Store(int64(5 * time.Second))
	ahead := honest.Now().Add(4 * time.Second)
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		waitUntil(t, ctx, id+" fired ahead by the stepped host", func() bool { return get(t, s, id).LastTick.After(ahead) })
	}
	// Its next sync brings it back to Redis's clock; the honest host
	// catches up with it, and both go on.
	if err := stepped.SyncClock(ctx); err != nil {
		t.Fatal(err)
	}
	later := honest.Now().Add(2 * time.Second)
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		waitUntil(t, ctx, id+" fired after the sync", func() bool { return get(t, s, id).LastTick.After(later) })
	}
	for _, stop := range stops {
		stop()
	}
	r := &scheduler.ScheduleRunner{Schedules: s} // finishes a claim a stop cut short
	for i := range n {
		if err := r.Step(ctx, fmt.Sprintf("c%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		checkEveryTickOnce(t, honest, s, id, "r"+id)
	}
}
