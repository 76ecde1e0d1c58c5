package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
)

func routesOf(t *testing.T, q *queue.Queue) []string {
	t.Helper()
	rs, err := q.Client().SMembers(context.Background(), queue.RoutesKey(q.Namespace())).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rs)
	return rs
}

func prune(t *testing.T, q *queue.Queue, keep map[string]bool, now time.Time) []string {
	t.Helper()
	got, err := q.Ops.PruneRoutes(context.Background(), keep, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// A route that has held no job and been served by nobody for RouteIdleTTL
// leaves the routes set; one holding a pending, scheduled, running or dead
// job, or one a live worker serves or a cron entry fires to (keep), never
// does. An enqueue to a pruned route lists it again.
func TestPruneRoutes_IdleRoutesGoAfterTheIdlePeriodOthersStay(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		enq := func(route string, j queue.NewJob) {
			t.Helper()
			if _, err := q.Jobs.Enqueue(ctx, route, queue.Normal, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range []string{"done", "pending", "active", "dead", "served", "cron"} {
			enq(r, job(t, r))
		}
		later := job(t, "scheduled")
		later.RunAt = now.Add(48 * time.Hour)
		enq("scheduled", later)
		for _, r := range []string{"done", "served", "cron"} { // run and finished: empty
			ds, err := q.Jobs.Fetch(ctx, r, queue.Priorities, 1, now.Add(time.Minute), now)
			if err != nil || len(ds) != 1 {
				t.Fatalf("fetch %s = %v, %v", r, ds, err)
			}
			if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Hour); !ok || err != nil {
				t.Fatalf("ack = %v, %v", ok, err)
			}
		}
		if ds, err := q.Jobs.Fetch(ctx, "active", queue.Priorities, 1, now.Add(72*time.Hour), now); err != nil || len(ds) != 1 {
			t.Fatalf("fetch active = %v, %v", ds, err)
		}
		ds, err := q.Jobs.Fetch(ctx, "dead", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch dead = %v, %v", ds, err)
		}
		if out, err := q.Jobs.Fail(ctx, ds[0], queue.Failure{Message: "x", Final: true, Record: []byte("f"), TTL: time.Hour}, now); err != nil || out != queue.EndDead {
			t.Fatalf("fail = %v, %v", out, err)
		}
		all := routesOf(t, q)
		keep := map[string]bool{"served": true, "cron": true}

		if got := prune(t, q, keep, now); len(got) != 0 {
			t.Fatalf("first pass pruned %v; a route is only seen idle there", got)
		}
		if got := prune(t, q, keep, now.Add(queue.RouteIdleTTL-time.Minute)); len(got) != 0 {
			t.Fatalf("pass before the idle period ends pruned %v", got)
		}
		if got := prune(t, q, keep, now.Add(queue.RouteIdleTTL)); !slices.Equal(got, []string{"done"}) {
			t.Fatalf("pass at the idle period's end pruned %v; want only the idle, unserved route done", got)
		}
		want := slices.DeleteFunc(slices.Clone(all), func(r string) bool { return r == "done" })
		if got := routesOf(t, q); !slices.Equal(got, want) {
			t.Fatalf("routes after pruning = %v, want %v", got, want)
		}
		// A producer (another process) enqueues to it again: it is listed.
		other, err := queue.New(q.Client(), q.Namespace())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Jobs.Enqueue(ctx, "done", queue.Normal, []queue.NewJob{job(t, "done")}, now); err != nil {
			t.Fatal(err)
		}
		if got := routesOf(t, q); !slices.Equal(got, all) {
			t.Fatalf("routes after an enqueue to the pruned route = %v, want %v", got, all)
		}
	})
}

// A route enqueued to after it was seen idle is not pruned: the idle period
// starts again from that enqueue, even when its job is done by then.
func TestPruneRoutes_AnEnqueueRestartsTheIdlePeriod(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		if err := q.Client().SAdd(ctx, queue.RoutesKey(q.Namespace()), "r").Err(); err != nil {
			t.Fatal(err)
		}
		prune(t, q, nil, now)
		d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		if ok, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Hour); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		if got := prune(t, q, nil, now.Add(queue.RouteIdleTTL)); len(got) != 0 {
			t.Fatalf("pruned %v although r was enqueued to within the idle period", got)
		}
		if got := prune(t, q, nil, now.Add(2*queue.RouteIdleTTL)); !slices.Equal(got, []string{"r"}) {
			t.Fatalf("pruned %v; want r, idle for a full period since its enqueue", got)
		}
	})
}

// sremHook runs before, once, just before the first SREM goes out.
type sremHook struct {
	armed  atomic.Bool
	before func()
}

func (h *sremHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *sremHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "srem" && h.armed.CompareAndSwap(true, false) {
			h.before()
		}
		return next(ctx, cmd)
	}
}
func (h *sremHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// An enqueue that lands between the prune's check of a route and its
// removal from the routes set, from a process that added the route lately
// (and so sends no SADD), does not leave the route unlisted: the prune puts
// it back.
func TestPruneRoutes_AnEnqueueRacingTheRemovalKeepsTheRouteListed(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0] // this producer added r just now
		if ok, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Hour); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		prune(t, q, nil, now)
		h := &sremHook{before: func() {
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
				t.Error(err)
			}
		}}
		q.Client().AddHook(h)
		h.armed.Store(true)
		if got := prune(t, q, nil, now.Add(queue.RouteIdleTTL)); len(got) != 0 {
			t.Fatalf("pruned %v although an enqueue raced the removal", got)
		}
		if h.armed.Load() {
			t.Fatal("the prune sent no SREM: the race was not set up")
		}
		if got := routesOf(t, q); !slices.Equal(got, []string{"r"}) {
			t.Fatalf("routes = %v; want r listed, it holds a job", got)
		}
	})
}

// A prune that died between removing a route and checking it again leaves
// the route's idle entry behind; if the route was written to meanwhile, the
// next pass lists it again before it forgets the entry.
func TestPruneRoutes_APruneThatDiedMidwayLeavesNoWrittenRouteUnlisted(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		var sadds atomic.Int64
		q.Client().AddHook(saddCounter{&sadds})
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		// What the dead prune left: r out of the set, its entry recorded
		// before the enqueue (counter 0).
		ms := now.Add(-2 * queue.RouteIdleTTL).UnixMilli()
		if err := q.Client().HSet(ctx, queue.RoutesIdleKey(q.Namespace()), "r", fmt.Sprintf("%d:0", ms)).Err(); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "both SADDs of the enqueue", func() bool { return sadds.Load() == 2 })
		if err := q.Client().SRem(ctx, queue.RoutesKey(q.Namespace()), "r").Err(); err != nil {
			t.Fatal(err)
		}
		prune(t, q, nil, now)
		if got := routesOf(t, q); !slices.Contains(got, "r") {
			t.Fatalf("routes = %v; want r listed again, it holds a job", got)
		}
	})
}
