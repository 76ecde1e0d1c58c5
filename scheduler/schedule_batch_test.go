package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// scriptCalls counts the script calls a client makes that are answered.
type scriptCalls struct{ n atomic.Int64 }

func (h *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := strings.ToLower(cmd.Name()); err == nil && (name == "evalsha" || name == "eval") {
			h.n.Add(1) // a NOSCRIPT answer, resent as EVAL, counts once
		}
		return err
	}
}
func (h *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if name := strings.ToLower(cmd.Name()); name == "evalsha" || name == "eval" {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// Many schedules due at one tick are claimed, enqueued and marked done in
// batches: a script call per bucket (claims, dones) and per bucket and
// route (enqueues), not three per schedule; and each still gets one job.
func TestSchedules_ManyDueAtOnceAreFiredInBatches(t *testing.T) {
	srv := redistest.Shared(t)
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	s := &scheduler.Schedules{Queue: q}
	const n = 300
	for i := range n {
		d := def(t, fmt.Sprintf("b%03d", i), "r")
		d.Spec = "@every 1h"
		if _, err := s.Put(ctx, d, q.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// Every schedule's next tick is now: one pass finds them all due.
	tick := q.Now().Truncate(time.Second)
	for i := range n {
		if err := rdb.HSet(ctx, s.Key(fmt.Sprintf("b%03d", i)), "next", tick.UnixMilli()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ZAdd(ctx, s.IndexKey(scheduler.BucketOf(fmt.Sprintf("b%03d", i))), redis.Z{Score: float64(tick.UnixMilli()), Member: fmt.Sprintf("b%03d", i)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	calls := &scriptCalls{}
	rdb.AddHook(calls)
	var fired atomic.Int64
	r := &scheduler.ScheduleRunner{Schedules: s, OnFire: func(scheduler.Schedule, time.Time, string) { fired.Add(1) },
		OnError: func(id string, err error) { t.Errorf("schedule %s: %v", id, err) }}
	if _, err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if fired.Load() != n {
		t.Fatalf("one pass fired %d of %d due schedules", fired.Load(), n)
	}
	if got := calls.n.Load(); got > 3*scheduler.Buckets {
		t.Fatalf("%d script calls to fire %d schedules; want at most %d (claim, enqueue, done per bucket)", got, n, 3*scheduler.Buckets)
	}
	if ids := readyIDs(t, q, "r"); len(ids) != n {
		t.Fatalf("%d jobs for %d ticks", len(ids), n)
	}
	for i := range n {
		id := fmt.Sprintf("b%03d", i)
		if sc := get(t, s, id); sc.Fired != 1 || sc.LastJob != scheduler.TickJobID(id, "r", tick) || sc.Pending != "" {
			t.Fatalf("%s after the pass: fired %d, last job %q, pending %q", id, sc.Fired, sc.LastJob, sc.Pending)
		}
	}
}
