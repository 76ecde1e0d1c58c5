package queue_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/redis/go-redis/v9"
)

// A worker limited to some task names drains its route strictly by
// priority, as every worker does: all high jobs before any normal one, all
// normal before any low, whatever order they were enqueued in.
func TestFetchTypes_TakesHighBeforeNormalBeforeLow(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		want := map[queue.Priority]string{}
		for _, p := range []queue.Priority{queue.Low, queue.Normal, queue.High} {
			j := job(t, "r")
			if _, err := q.Jobs.Enqueue(ctx, "r", p, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
			want[p] = j.ID
		}
		for _, p := range queue.Priorities {
			ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"t"}, 1, now.Add(time.Minute), now)
			if err != nil || len(ds) != 1 || ds[0].ID != want[p] {
				t.Fatalf("fetch one = %v, %v; want the %s job %s", dispatchIDs(ds), err, p, want[p])
			}
		}
		// One call taking several comes back in the same order.
		for _, p := range []queue.Priority{queue.Low, queue.Normal, queue.High} {
			j := job(t, "r")
			if _, err := q.Jobs.Enqueue(ctx, "r", p, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
			want[p] = j.ID
		}
		ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"t"}, 3, now.Add(time.Minute), now)
		if err != nil || len(ds) != 3 {
			t.Fatalf("fetch three = %v, %v", dispatchIDs(ds), err)
		}
		for i, p := range queue.Priorities {
			if ds[i].ID != want[p] {
				t.Fatalf("fetch three took %s at position %d, want the %s job %s", ds[i].ID, i, p, want[p])
			}
		}
	})
}

// A lease renewed after the reaper read it as expired is not reaped: the
// worker renewing it is alive and goes on to finish the job, which keeps
// its attempts and its lease.
func TestReap_LeaseRenewedAfterTheReaperReadItIsLeftAlone(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		until, reapAt, renewed := now.Add(time.Minute), now.Add(2*time.Minute), now.Add(3*time.Minute)
		d := leaseLight(t, q, 1, now, until)[0]
		asked := 0
		renewFirst := func(e queue.Expired) queue.Verdict {
			asked++
			// The reaper has read the lease as expired; the worker renews it
			// now, before the reaper's script runs.
			if lost, err := q.Jobs.Renew(ctx, "r", []*queue.Dispatch{d}, renewed); err != nil || len(lost) != 0 {
				t.Errorf("renew = %v, %v", lost, err)
			}
			return verdict(reapAt)(e)
		}
		got, err := q.Jobs.Reap(ctx, "r", reapAt, renewFirst)
		if err != nil {
			t.Fatal(err)
		}
		if asked != 1 {
			t.Fatalf("the reaper asked about %d jobs, want the one expired job: the race was not set up", asked)
		}
		if o, ok := got[d.ID]; ok && o != queue.EndStale {
			t.Fatalf("reap = %v; the job whose lease was renewed under the reaper was reaped", got)
		}
		s, err := q.Jobs.Lookup(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != queue.StatusProcessing || s.Attempts != 0 || s.LeaseDeadline.UnixMilli() != renewed.UnixMilli() {
			t.Fatalf("job after the lost race = %+v; want processing, no attempt counted, leased until %v", s, renewed)
		}
		if ok, err := q.Jobs.Ack(ctx, d, []byte("done"), time.Minute); !ok || err != nil {
			t.Fatalf("the renewing worker's ack = %v, %v; want accepted", ok, err)
		}
	})
}

func dispatchIDs(ds []*queue.Dispatch) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// A dispatch whose lease was reaped, the job since leased again by another
// fetch, can neither requeue the job (a shutdown handing it back) nor hand
// it back as a lost fetch: the job stays with the new lease, under its token,
// and out of the ready lists.
func TestRequeueAndHandBack_UnderAReapedLeaseLeaveTheNewLeaseAlone(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		until, later := now.Add(time.Minute), now.Add(2*time.Minute)
		stale := leaseLight(t, q, 1, now, until)[0]
		if got, err := q.Jobs.Reap(ctx, "r", later, verdict(later)); err != nil || got[stale.ID] != queue.EndRetrying {
			t.Fatalf("reap = %v, %v; want the job retried", got, err)
		}
		if n, err := q.Jobs.Promote(ctx, "r", later); err != nil || n != 1 {
			t.Fatalf("promote = %d, %v", n, err)
		}
		fresh := fetchAll(t, q, 1, later, later.Add(time.Hour))[0]
		if fresh.ID != stale.ID || fresh.Token == stale.Token {
			t.Fatalf("second fetch = %s under %s; want the same job under a new token", fresh.ID, fresh.Token)
		}
		if out, err := q.Jobs.Requeue(ctx, stale, []byte("canceled record"), time.Minute, time.Now()); out != queue.EndStale || err != nil {
			t.Fatalf("requeue under the reaped lease = %v, %v; want refused as stale", out, err)
		}
		lost := &queue.LostFetch{Route: "r", Token: stale.Token, Until: until, IDs: []string{stale.ID}}
		if n, err := handBack(ctx, q, lost); n != 0 || err != nil {
			t.Fatalf("hand back under the reaped lease = %d, %v; want nothing handed back", n, err)
		}
		k := q.Keys("r")
		if tok, _ := q.Client().HGet(ctx, k.Leases(), fresh.ID).Result(); tok != fresh.Token {
			t.Fatalf("the job's lease = %q, want the new lease's %q", tok, fresh.Token)
		}
		if d, _ := q.Ops.Depths(ctx, []string{"r"}); d[0].High+d[0].Normal+d[0].Low != 0 || d[0].Active != 1 {
			t.Fatalf("route after the stale hand-backs = %+v; want the one job active and none pending", d[0])
		}
		if ok, err := q.Jobs.Ack(ctx, fresh, []byte("done"), time.Minute); !ok || err != nil {
			t.Fatalf("the new lease's ack = %v, %v; want accepted", ok, err)
		}
	})
}

// The re-add of a route after a write follows the monotonic clock: once
// routeRenote has passed on it, the next write lists a route that a prune
// removed again, whatever the wall clock did meanwhile.
func TestRouteWritten_ReaddsARemovedRouteByTheMonotonicClock(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		var elapsed, sadds atomic.Int64
		q.UseMonotonicClock(func() time.Duration { return time.Duration(elapsed.Load()) })
		q.Client().AddHook(saddCounter{&sadds})
		enqueue := func() {
			t.Helper()
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		enqueue() // the route noted before the write, and written after it
		waitUntil(t, "both SADDs of the first write", func() bool { return sadds.Load() == 2 })
		if err := q.Client().SRem(ctx, queue.RoutesKey(q.Namespace()), "r").Err(); err != nil {
			t.Fatal(err)
		}
		elapsed.Add(int64(2 * time.Minute))
		enqueue()
		waitUntil(t, "the removed route listed again after a write two monotonic minutes later", func() bool {
			ok, err := q.Client().SIsMember(ctx, queue.RoutesKey(q.Namespace()), "r").Result()
			return err == nil && ok
		})
	})
}

// saddCounter counts the SADD commands a client has sent and had answered.
type saddCounter struct{ n *atomic.Int64 }

func (saddCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c saddCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "sadd" {
			c.n.Add(1)
		}
		return err
	}
}

func (saddCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The stats series buckets an ack or a batch's settle carries are checked
// before anything is written: a field that is not w<i> or t<i>, or a count
// below 1, refuses the call, and the job is still leased to its run, which
// then completes it.
func TestAck_BadSeriesBucketsRefuseTheCallBeforeAnyWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %v, %v", dispatchIDs(ds), err)
		}
		for _, bad := range []struct {
			buckets []any
			want    string
		}{
			{[]any{"x1", 1}, "bad series bucket field x1"},
			{[]any{"w1", 0}, "series bucket count must be > 0"},
		} {
			for name, call := range map[string]func() error{
				"ack":          func() error { return q.Jobs.AckWithBuckets(ctx, ds[0], bad.buckets...) },
				"batch settle": func() error { return q.Jobs.SettleBatchWithBuckets(ctx, ds[0], bad.buckets...) },
			} {
				if err := call(); err == nil || !strings.Contains(err.Error(), bad.want) {
					t.Fatalf("%s with buckets %v = %v; want an error saying %q", name, bad.buckets, err, bad.want)
				}
			}
		}
		if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("record"), time.Hour); err != nil || !ok {
			t.Fatalf("the run's own ack after the refused calls = %v, %v; want it completed", ok, err)
		}
	})
}
