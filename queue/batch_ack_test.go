package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// batchOfSix enqueues on route "r" a plain job, two that fail (to retry,
// for good), one that snoozes, one holding a unique key until completed
// and one holding a key until ended, fetches them all and returns their
// dispatches in that order with the ends SettleBatch is given.
func batchOfSix(t *testing.T, q *queue.Queue) ([]*queue.Dispatch, []queue.BatchEnd) {
	t.Helper()
	ctx := context.Background()
	now := q.Now()
	jobs := []queue.NewJob{job(t, "r"), job(t, "r"), job(t, "r"), job(t, "r"),
		uniqueJob(t, "done", queue.UntilCompleted), uniqueJob(t, "dead", queue.UntilEnded)}
	if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
		t.Fatal(err)
	}
	_, fetched := fetchIDs(t, q, "r", 10)
	ds := make([]*queue.Dispatch, len(jobs))
	for _, d := range fetched {
		ds[slices.IndexFunc(jobs, func(j queue.NewJob) bool { return j.ID == d.ID })] = d
	}
	retry := queue.Failure{Message: "boom", RetryAt: now.Add(time.Hour), Record: []byte("failed"), TTL: time.Minute}
	dead := retry
	dead.Final = true
	snooze := queue.Failure{Message: "later", RetryAt: now.Add(time.Minute), Snooze: true, Record: []byte("snoozed"), TTL: time.Minute}
	ends := []queue.BatchEnd{
		{D: ds[0], Record: []byte("r0"), TTL: time.Minute, Finished: now},
		{D: ds[1], Failure: &retry, Finished: now},
		{D: ds[2], Failure: &dead, Finished: now},
		{D: ds[3], Failure: &snooze, Finished: now},
		{D: ds[4], Record: []byte("r4"), TTL: time.Minute, Finished: now},
		{D: ds[5], Failure: &dead, Finished: now},
	}
	return ds, ends
}

func TestSettleBatch_EachJobOfAMixedBatchEndsItsOwnWayInOneCall(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		ds, ends := batchOfSix(t, q)
		got, err := q.Jobs.SettleBatch(ctx, ends, q.Now())
		if err != nil {
			t.Fatal(err)
		}
		want := []queue.Ending{queue.EndCompleted, queue.EndRetrying, queue.EndDead, queue.EndSnoozed, queue.EndCompleted, queue.EndDead}
		if !slices.Equal(got, want) {
			t.Fatalf("endings %v, want %v", got, want)
		}
		for i, rec := range map[int]string{0: "r0", 2: "failed", 4: "r4", 5: "failed"} {
			if b, err := q.Jobs.Result(ctx, ds[i].ID); err != nil || string(b) != rec {
				t.Fatalf("job %d's record = %q, %v; want %q", i, b, err, rec)
			}
		}
		states, err := q.Jobs.LookupMany(ctx, []string{ds[1].ID, ds[2].ID, ds[3].ID, ds[5].ID})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range []struct {
			status   queue.Status
			attempts int
		}{{queue.StatusScheduled, 1}, {queue.StatusFailed, 1}, {queue.StatusScheduled, 0}, {queue.StatusFailed, 1}} {
			if s := states[i]; s == nil || s.Status != w.status || s.Attempts != w.attempts {
				t.Fatalf("failed job %d: %+v, want %s with %d attempts", i, s, w.status, w.attempts)
			}
		}
		if h := holderOf(t, q, "done"); h != "" {
			t.Fatalf("a completion left its unique key held by %s", h)
		}
		if h := holderOf(t, q, "dead"); h != "" {
			t.Fatalf("a death left the key held until ended by %s", h)
		}
		// Every lease ended: nothing is left to reap.
		if n, err := q.Client().ZCard(ctx, q.Keys("r").Active()).Result(); err != nil || n != 0 {
			t.Fatalf("active set holds %d lease groups (%v), want none", n, err)
		}
	})
}

// A resent call (its reply lost) settles nothing again: every token was
// released by the first run.
func TestSettleBatch_AResendSettlesNothingTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		ds, ends := batchOfSix(t, q)
		if _, err := q.Jobs.SettleBatch(ctx, ends, q.Now()); err != nil {
			t.Fatal(err)
		}
		stats := func() map[string]string {
			return q.Client().HGetAll(ctx, q.Keys("r").Stats()).Val()
		}
		before := stats()
		again, err := q.Jobs.SettleBatch(ctx, ends, q.Now())
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range again {
			if e != queue.EndStale {
				t.Fatalf("resent end %d came to %v, want stale", i, e)
			}
		}
		if after := stats(); !mapsEqual(before, after) {
			t.Fatalf("the resend changed the stats: %v, then %v", before, after)
		}
		if s, err := q.Jobs.Lookup(ctx, ds[1].ID); err != nil || s.Attempts != 1 || s.Status != queue.StatusScheduled {
			t.Fatalf("the retried job after the resend: %+v, %v; want scheduled with 1 attempt", s, err)
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A batch of 100 jobs, completed and failed, is settled in one round trip,
// where acks and failures one job at a time take a call each.
func TestSettleBatch_OneRoundTripForAHundredJobs(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	settle := func(route string) {
		jobs := make([]queue.NewJob, 100)
		for i := range jobs {
			jobs[i] = job(t, route)
		}
		if _, err := q.Jobs.Enqueue(ctx, route, queue.Normal, jobs, q.Now()); err != nil {
			t.Fatal(err)
		}
		_, ds := fetchIDs(t, q, route, 100)
		now := q.Now()
		ends := make([]queue.BatchEnd, len(ds))
		for i, d := range ds {
			ends[i] = queue.BatchEnd{D: d, Record: []byte("ok"), TTL: time.Minute, Finished: now}
			if i%10 == 0 {
				ends[i].Failure = &queue.Failure{Message: "boom", RetryAt: now.Add(time.Hour), Record: []byte("no"), TTL: time.Minute}
			}
		}
		_, each := commandsOf(t, rdb, func() {
			got, err := q.Jobs.SettleBatch(ctx, ends, now)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range got {
				if want := map[bool]queue.Ending{false: queue.EndCompleted, true: queue.EndRetrying}[i%10 == 0]; e != want {
					t.Fatalf("end %d = %v, want %v", i, e, want)
				}
			}
		})
		if calls := each["evalsha"] + each["eval"]; route != "warm" && calls != 1 {
			t.Fatalf("settling 100 jobs made %d script calls, want 1: %v", calls, each)
		}
	}
	settle("warm") // the script loaded
	settle("r")
}
