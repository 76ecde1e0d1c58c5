package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// keyedJob is a job of task t in the flow of key.
func keyedJob(t *testing.T, route, task, key string) queue.NewJob {
	j := job(t, route)
	j.Name, j.Keyed, j.Key = task, true, key
	return j
}

func enqueueKeyed(t *testing.T, q *queue.Queue, route string, p queue.Priority, task, key string, n int) []string {
	t.Helper()
	jobs := make([]queue.NewJob, n)
	ids := make([]string, n)
	for i := range jobs {
		jobs[i] = keyedJob(t, route, task, key)
		ids[i] = jobs[i].ID
	}
	if _, err := q.Jobs.Enqueue(context.Background(), route, p, jobs, q.Now()); err != nil {
		t.Fatal(err)
	}
	return ids
}

func fetchIDs(t *testing.T, q *queue.Queue, route string, n int) ([]string, []*queue.Dispatch) {
	t.Helper()
	now := q.Now()
	ds, err := q.Jobs.Fetch(context.Background(), route, queue.Priorities, n, now.Add(time.Minute), now)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids, ds
}

func TestFlow_ALateKeysFirstJobGoesBeforeAnotherKeysBacklog(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		a := enqueueKeyed(t, q, "fair", queue.Normal, "t", "A", 100)
		b := enqueueKeyed(t, q, "fair", queue.Normal, "t", "B", 1)
		got, _ := fetchIDs(t, q, "fair", 2)
		if len(got) != 2 || got[0] != a[0] || got[1] != b[0] {
			t.Fatalf("fetch of 2 took %v, want A's first %s then B's first %s", got, a[0], b[0])
		}
		got, _ = fetchIDs(t, q, "fair", 200)
		if len(got) != 99 || got[0] != a[1] || got[98] != a[99] {
			t.Fatalf("the rest came as %d jobs, want A's 99 in order", len(got))
		}
	})
}

func TestFlow_MaxRunningOneRunsEachKeyOneAtATimeInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "one", "t", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		a := enqueueKeyed(t, q, "one", queue.Normal, "t", "A", 3)
		b := enqueueKeyed(t, q, "one", queue.Normal, "t", "B", 3)
		got, ds := fetchIDs(t, q, "one", 10)
		if len(got) != 2 || got[0] != a[0] || got[1] != b[0] {
			t.Fatalf("took %v, want only the first of A and of B", got)
		}
		if more, _ := fetchIDs(t, q, "one", 10); len(more) != 0 {
			t.Fatalf("took %v while both keys run a job", more)
		}
		if _, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); err != nil {
			t.Fatal(err)
		}
		got, _ = fetchIDs(t, q, "one", 10)
		if len(got) != 1 || got[0] != a[1] {
			t.Fatalf("after A's first ended took %v, want A's second %s", got, a[1])
		}
	})
}

func TestFlows_ShowRunningWaitingAndHeldPerKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "seen", "t", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		enqueueKeyed(t, q, "seen", queue.Normal, "t", "A", 3)
		enqueueKeyed(t, q, "seen", queue.Normal, "t", "B", 1)
		fetchIDs(t, q, "seen", 10)
		fetchIDs(t, q, "seen", 10) // finds A at its cap: held
		st, err := q.Flows.State(ctx, "seen", 10)
		if err != nil {
			t.Fatal(err)
		}
		if st.Running != 2 || st.Waiting != 2 || st.Held != 1 || st.Throttled != 1 {
			t.Fatalf("state %+v, want 2 running, 2 waiting, A held once", st)
		}
		if len(st.Busiest) != 2 || st.Busiest[0].Key != "A" || st.Busiest[0].Waiting != 2 || !st.Busiest[0].Parked {
			t.Fatalf("busiest %+v, want A first with 2 waiting and parked at its cap", st.Busiest)
		}
		if l := st.Tasks["t"]; l.MaxRunning != 1 {
			t.Fatalf("task limits %+v", st.Tasks)
		}
	})
}

// fetchAt fetches at a chosen time on Redis's clock, with a lease of lease.
func fetchAt(t *testing.T, q *queue.Queue, route string, n int, now time.Time, lease time.Duration) []*queue.Dispatch {
	t.Helper()
	ds, err := q.Jobs.Fetch(context.Background(), route, queue.Priorities, n, now.Add(lease), now)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestFlow_RateStartsBurstThenOnePerInterval(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "rated", "t", queue.Limits{Rate: 10, Per: time.Second, Burst: 2}); err != nil {
			t.Fatal(err)
		}
		enqueueKeyed(t, q, "rated", queue.Normal, "t", "", 10)
		now := q.Now()
		if got := fetchAt(t, q, "rated", 10, now, time.Minute); len(got) != 2 {
			t.Fatalf("took %d at first, want the burst of 2", len(got))
		}
		if got := fetchAt(t, q, "rated", 10, now.Add(50*time.Millisecond), time.Minute); len(got) != 0 {
			t.Fatalf("took %d 50 ms later, want none before the 100 ms interval", len(got))
		}
		if got := fetchAt(t, q, "rated", 10, now.Add(100*time.Millisecond), time.Minute); len(got) != 1 {
			t.Fatalf("took %d after one interval, want 1", len(got))
		}
		if got := fetchAt(t, q, "rated", 10, now.Add(400*time.Millisecond), time.Minute); len(got) != 2 {
			t.Fatalf("took %d after a quiet 300 ms, want the burst of 2 again", len(got))
		}
	})
}

func TestFlow_AFetchHeldBackByRateSaysWhenToComeBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "due", "t", queue.Limits{Rate: 1, Per: time.Second}); err != nil {
			t.Fatal(err)
		}
		enqueueKeyed(t, q, "due", queue.Normal, "t", "k", 3)
		now := q.Now()
		var due time.Time
		w := queue.Waiter{Channel: "w", Until: now.Add(time.Minute), Due: func(at time.Time) { due = at }}
		ds, err := q.Jobs.FetchOrWait(ctx, "due", queue.Priorities, 5, now.Add(time.Minute), now, w)
		if err != nil || len(ds) != 1 {
			t.Fatalf("took %d (%v), want 1", len(ds), err)
		}
		if d := due.Sub(now); d < 990*time.Millisecond || d > 1010*time.Millisecond {
			t.Fatalf("due %v after the fetch, want 1 s", d)
		}
	})
}

func TestFlow_AReapedLeaseFreesItsSlot(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "lost", "t", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		ids := enqueueKeyed(t, q, "lost", queue.Normal, "t", "k", 2)
		now := q.Now()
		if got := fetchAt(t, q, "lost", 5, now, time.Second); len(got) != 1 {
			t.Fatalf("took %d, want 1", len(got))
		}
		later := now.Add(1001 * time.Millisecond)
		if got := fetchAt(t, q, "lost", 5, later, time.Second); len(got) != 0 {
			t.Fatalf("took %d before the reaper recovered the lost lease", len(got))
		}
		if out, err := q.Jobs.Reap(ctx, "lost", later, verdict(later.Add(time.Hour))); err != nil || out[ids[0]] != queue.EndRetrying {
			t.Fatalf("reap: %v %v", out, err)
		}
		got := fetchAt(t, q, "lost", 5, later, time.Second)
		if len(got) != 1 || got[0].ID != ids[1] {
			t.Fatalf("after the reap took %v, want the key's second job (the first waits for its retry)", got)
		}
	})
}

func TestFlow_AHandedBackJobIsItsKeysNextAndFreesItsSlot(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "back", "t", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		ids := enqueueKeyed(t, q, "back", queue.Normal, "t", "k", 3)
		_, ds := fetchIDs(t, q, "back", 5)
		if out, err := q.Jobs.Requeue(ctx, ds[0], []byte("c"), time.Minute, q.Now()); err != nil || out != queue.EndHandedBack {
			t.Fatalf("requeue: %v %v", out, err)
		}
		got, ds := fetchIDs(t, q, "back", 5)
		if len(got) != 1 || got[0] != ids[0] {
			t.Fatalf("after the hand-back took %v, want the same first job %s", got, ids[0])
		}
		if _, err := q.Jobs.Fail(ctx, ds[0], queue.Failure{Message: "x", RetryAt: q.Now(), Record: []byte("f"), TTL: time.Minute}, q.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Promote(ctx, "back", q.Now().Add(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		got, _ = fetchIDs(t, q, "back", 5)
		if len(got) != 1 || got[0] != ids[0] {
			t.Fatalf("after a failure and its retry took %v, want the retried first job %s before %s", got, ids[0], ids[1])
		}
	})
}

func TestFlow_RouteCapBoundsEveryJobOfTheRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetRouteLimits(ctx, "capped", queue.Limits{MaxRunning: 3}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if _, err := q.Jobs.Enqueue(ctx, "capped", queue.Normal, []queue.NewJob{job(t, "capped")}, q.Now()); err != nil {
				t.Fatal(err)
			}
		}
		enqueueKeyed(t, q, "capped", queue.Normal, "t", "k", 5)
		got, ds := fetchIDs(t, q, "capped", 10)
		if len(got) != 3 {
			t.Fatalf("took %d, want the route's cap of 3", len(got))
		}
		if _, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, _ = fetchIDs(t, q, "capped", 10); len(got) != 1 {
			t.Fatalf("after one ended took %d, want 1", len(got))
		}
		if err := q.Flows.SetRouteLimits(ctx, "capped", queue.Limits{}); err != nil {
			t.Fatal(err)
		}
		if got, _ = fetchIDs(t, q, "capped", 10); len(got) != 6 {
			t.Fatalf("with the limit removed took %d, want the 6 left", len(got))
		}
	})
}

func TestFlow_PrioritiesHoldAcrossKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		enqueueKeyed(t, q, "prio", queue.Low, "t", "A", 3)
		high := enqueueKeyed(t, q, "prio", queue.High, "t", "B", 1)
		got, _ := fetchIDs(t, q, "prio", 1)
		if len(got) != 1 || got[0] != high[0] {
			t.Fatalf("took %v, want the high job %s first", got, high[0])
		}
	})
}

func TestFlow_GarbageLimitsAndStateNeverHoldAKeyBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		k := q.Keys("junk")
		ids := enqueueKeyed(t, q, "junk", queue.Normal, "t", "k", 2)
		rdb := q.Client()
		if err := rdb.HSet(ctx, k.Limits(), "t:t", "not a limit", "route", "1 2 x").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, k.Flows(), "t|k", "9e99 ghost1 ghost2").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, k.Held(), "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
		got, _ := fetchIDs(t, q, "junk", 5)
		if len(got) != 2 || got[0] != ids[0] {
			t.Fatalf("took %v, want both jobs: garbage limits read as none", got)
		}
	})
}

func TestFlow_AFetchRunTwiceTakesNothingMore(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "twice", "t", queue.Limits{MaxRunning: 2}); err != nil {
			t.Fatal(err)
		}
		enqueueKeyed(t, q, "twice", queue.Normal, "t", "k", 4)
		got, ds := fetchIDs(t, q, "twice", 5)
		if len(got) != 2 {
			t.Fatalf("took %d, want the cap of 2", len(got))
		}
		for _, d := range ds {
			if _, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ = fetchIDs(t, q, "twice", 5); len(got) != 2 {
			t.Fatalf("after acks run twice took %d, want 2: a second ack frees no second slot", len(got))
		}
		if got, _ = fetchIDs(t, q, "twice", 5); len(got) != 0 {
			t.Fatalf("took %d more over the cap", len(got))
		}
	})
}

func TestFlow_AWorkerOfSomeTasksTakesOnlyTheirKeyedJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		enqueueKeyed(t, q, "types", queue.Normal, "other", "A", 2)
		mine := enqueueKeyed(t, q, "types", queue.Normal, "mine", "B", 2)
		now := q.Now()
		ds, err := q.Jobs.FetchTypes(ctx, "types", queue.Priorities, []string{"mine"}, 10, now.Add(time.Minute), now)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[0].ID != mine[0] || ds[1].ID != mine[1] {
			t.Fatalf("took %d jobs, want mine's 2 in order", len(ds))
		}
		if got, _ := fetchIDs(t, q, "types", 10); len(got) != 2 {
			t.Fatalf("a worker of every task then took %d, want other's 2", len(got))
		}
	})
}

func TestListJobs_PendingListsKeyedJobsAfterTheReadyLists(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		plain := job(t, "listed")
		if _, err := q.Jobs.Enqueue(ctx, "listed", queue.Normal, []queue.NewJob{plain}, q.Now()); err != nil {
			t.Fatal(err)
		}
		keyed := enqueueKeyed(t, q, "listed", queue.Normal, "t", "k", 3)
		want := append([]string{plain.ID}, keyed...)
		for _, newest := range []bool{false, true} {
			var got []string
			cursor := ""
			for pages := 0; pages < 10; pages++ {
				page, err := q.Ops.ListJobs(ctx, queue.ListQuery{Route: "listed", State: queue.ListPending, Limit: 2, Cursor: cursor, Newest: newest})
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range page.Jobs {
					got = append(got, j.ID)
				}
				if cursor = page.Next; cursor == "" {
					break
				}
			}
			if newest {
				slices.Reverse(got)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("newest=%v listed %v, want %v", newest, got, want)
			}
		}
	})
}

func TestFlow_KeyedAndUnkeyedJobsShareTheTurns(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		plain := make([]queue.NewJob, 40)
		for i := range plain {
			plain[i] = job(t, "mixed")
		}
		if _, err := q.Jobs.Enqueue(ctx, "mixed", queue.Normal, plain, q.Now()); err != nil {
			t.Fatal(err)
		}
		keyed := enqueueKeyed(t, q, "mixed", queue.Normal, "t", "k", 40)
		isKeyed := map[string]bool{}
		for _, id := range keyed {
			isKeyed[id] = true
		}
		var nKeyed int
		for i := 0; i < 40; i++ {
			got, _ := fetchIDs(t, q, "mixed", 1)
			if len(got) == 1 && isKeyed[got[0]] {
				nKeyed++
			}
		}
		// Each fetch of one job serves the keyed or the unkeyed first at
		// random (its token): both must have had turns.
		if nKeyed < 5 || nKeyed > 35 {
			t.Fatalf("%d of 40 single fetches took a keyed job, want both kinds served", nKeyed)
		}
	})
}

func TestSweepFlows_PutsBackAFlowWhoseSlotsLeaseWasDroppedByHand(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "swept", "t", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		ids := enqueueKeyed(t, q, "swept", queue.Normal, "t", "k", 2)
		fetchIDs(t, q, "swept", 5)
		if err := q.Client().Del(ctx, q.Keys("swept").Leases()).Err(); err != nil {
			t.Fatal(err)
		}
		if got, _ := fetchIDs(t, q, "swept", 5); len(got) != 0 {
			t.Fatalf("took %v while the key is parked", got)
		}
		if n, err := q.Flows.Sweep(ctx, "swept", q.Now()); err != nil || n != 1 {
			t.Fatalf("sweep: %d, %v; want the one parked flow put back", n, err)
		}
		if got, _ := fetchIDs(t, q, "swept", 5); len(got) != 1 || got[0] != ids[1] {
			t.Fatalf("after the sweep took %v, want the key's second job", got)
		}
	})
}
