package queue_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// expiring is a job of route that expires at at, with args the envelope
// carries so that its expired record can be checked for them.
func expiring(t *testing.T, route string, at time.Time) queue.NewJob {
	t.Helper()
	e, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0xa2, 'h', 'i'}, Description: "expiring"})
	if err != nil {
		t.Fatal(err)
	}
	return queue.NewJob{ID: queue.NewID(route, time.Now()), Name: "x", Envelope: e, MaxRetries: 2, ExpireAt: at}
}

// requireExpired checks that job id ended expired: its status, its record
// (what the job was, from the envelope), and nothing of it left waiting.
func requireExpired(t *testing.T, q *queue.Queue, id string) {
	t.Helper()
	st, err := q.Jobs.Lookup(context.Background(), id)
	if err != nil {
		t.Fatalf("lookup %s: %v", id, err)
	}
	// queue reads a finished job's status off its record (results).
	if st.Status != queue.StatusCompleted || st.Result == nil {
		t.Fatalf("status of %s = %s with no record, want a finished job", id, st.Status)
	}
	rec, err := results.Decode(st.Result)
	if err != nil {
		t.Fatal(err)
	}
	j := rec.Job("r")
	if !rec.Expired || rec.OK || j.Status != queue.StatusExpired || rec.Name != "x" || string(rec.Args) != "\xa2hi" || rec.Description != "expiring" || rec.MaxRetries != 2 {
		t.Fatalf("record of %s = %+v, want an expired one with the job's name, args, description and retries", id, rec)
	}
	if n, _ := q.Client().ZScore(context.Background(), q.Keys("r").Expiry(), id).Result(); n != 0 {
		t.Fatalf("%s is still in the expiry set", id)
	}
}

func expiredCount(t *testing.T, q *queue.Queue) int {
	t.Helper()
	v, _ := q.Client().HGet(context.Background(), q.Keys("r").Stats(), "expired").Result()
	n, _ := strconv.Atoi(v)
	return n
}

// A job whose expiry passed before a worker took it is not handed out: the
// fetch sets it aside and ends it expired, and the job behind it runs. A
// light job, a delayed one (a hash of its own) and a keyed one alike; a job
// whose expiry has not passed starts and leaves the expiry set.
func TestExpire_AJobFoundExpiredAtFetchIsEndedNotLeased(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := q.Now()
		light := expiring(t, "r", now.Add(time.Second))
		keyed := expiring(t, "r", now.Add(time.Second))
		keyed.Keyed, keyed.Key = true, "k"
		delayed := expiring(t, "r", now.Add(2*time.Second))
		delayed.RunAt = now.Add(time.Second)
		fresh := expiring(t, "r", now.Add(time.Hour))
		plainJob := job(t, "r")
		for _, j := range []queue.NewJob{light, keyed, delayed, fresh, plainJob} {
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
		}
		// The delayed job becomes ready before its expiry, then waits past it.
		if _, err := q.Jobs.Promote(ctx, "r", now.Add(1500*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		later := now.Add(3 * time.Second)
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, later.Add(time.Minute), later)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, d := range ds {
			got[d.ID] = true
		}
		if len(ds) != 2 || !got[fresh.ID] || !got[plainJob.ID] {
			t.Fatalf("fetch took %v, want only %s and %s", got, fresh.ID, plainJob.ID)
		}
		for _, id := range []string{light.ID, keyed.ID, delayed.ID} {
			requireExpired(t, q, id)
		}
		if n := expiredCount(t, q); n != 3 {
			t.Fatalf("expired counter = %d, want 3", n)
		}
		if n, _ := q.Client().ZCard(ctx, q.Keys("r").Expiry()).Result(); n != 0 {
			t.Fatalf("expiry set holds %d entries, want none (the fresh job started)", n)
		}
		if n, _ := q.Client().HLen(ctx, q.Keys("r").FlowOf()).Result(); n != 0 {
			t.Fatalf("flowof holds %d entries, want none: the keyed job ended", n)
		}
	})
}

// Jobs that wait past their expiry where no fetch looks — a paused route, a
// delayed job due after it — are ended by the sweep (ExpireDue): never run.
func TestExpire_TheSweepEndsJobsWaitingOnAPausedRouteAndScheduled(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := q.Now()
		pending := expiring(t, "r", now.Add(time.Second))
		scheduled := expiring(t, "r", now.Add(time.Second))
		scheduled.RunAt = now.Add(time.Minute)
		keyed := expiring(t, "r", now.Add(time.Second))
		keyed.Keyed = true
		notYet := expiring(t, "r", now.Add(time.Hour))
		for _, j := range []queue.NewJob{pending, scheduled, keyed, notYet} {
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.High, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Ops.Pause(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		ended, err := q.Jobs.ExpireDue(ctx, "r", now.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(ended) != 3 || ended[0].Name != "x" || ended[0].Priority != queue.High {
			t.Fatalf("sweep ended %+v, want the 3 jobs past their expiry", ended)
		}
		for _, id := range []string{pending.ID, scheduled.ID, keyed.ID} {
			requireExpired(t, q, id)
		}
		if err := q.Ops.Resume(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		later := now.Add(2 * time.Second)
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, later.Add(time.Minute), later)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].ID != notYet.ID {
			t.Fatalf("after the sweep a fetch took %d jobs, want only %s", len(ds), notYet.ID)
		}
		// A second sweep finds nothing left to end.
		if again, err := q.Jobs.ExpireDue(ctx, "r", now.Add(2*time.Hour)); err != nil || len(again) != 0 {
			t.Fatalf("second sweep = %+v, %v; want nothing (the last job started)", again, err)
		}
	})
}

// A job of a caller-chosen id enqueued without an expiry clears the entry
// an earlier job of that id left (canceled while it waited), so that the
// sweep does not end it.
func TestExpire_AChosenIDWithoutExpiryClearsAnEarlierEntry(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := q.Now()
		q.Client().ZAdd(ctx, q.Keys("r").Expiry(), redisZ(now, "order-1"))
		j := job(t, "r")
		j.ID, j.ChosenID = "order-1", true
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now); err != nil {
			t.Fatal(err)
		}
		if ended, err := q.Jobs.ExpireDue(ctx, "r", now.Add(time.Hour)); err != nil || len(ended) != 0 {
			t.Fatalf("sweep = %+v, %v; want nothing ended", ended, err)
		}
	})
}

// Every expiry transition is harmless when its script runs twice: the sweep
// and a fetch that sets jobs aside.
func TestExpire_ScriptsRunTwiceChangeNothing(t *testing.T) {
	runTwiceCases(t, []twiceCase{
		{"expire: sweep of pending, scheduled and keyed jobs", func(t *testing.T, q *queue.Queue, h *twice) {
			ctx := context.Background()
			now := q.Now()
			a, b, c := expiring(t, "r", now), expiring(t, "r", now), expiring(t, "r", now)
			b.RunAt = now.Add(time.Minute)
			c.Keyed = true
			for _, j := range []queue.NewJob{a, b, c} {
				if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now); err != nil {
					t.Fatal(err)
				}
			}
			h.during(func() {
				if _, err := q.Jobs.ExpireDue(ctx, "r", now.Add(time.Second)); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"fetch: jobs set aside expired, and one leased", func(t *testing.T, q *queue.Queue, h *twice) {
			ctx := context.Background()
			now := q.Now()
			a, b := expiring(t, "r", now), expiring(t, "r", now.Add(time.Hour))
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{a, b}, now); err != nil {
				t.Fatal(err)
			}
			h.during(func() {
				later := now.Add(time.Second)
				if _, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 4, later.Add(time.Minute), later); err != nil {
					t.Fatal(err)
				}
			})
		}},
	})
}

// An enqueue with a busy key's policy is harmless when it runs twice: a
// drop refused once is refused again with nothing written, and a cancel of
// the running job is asked once.
func TestOnBusy_EnqueueRunTwiceChangesNothing(t *testing.T) {
	runTwiceCases(t, []twiceCase{
		{"enqueue: on_busy drop and cancel_running of a busy key", func(t *testing.T, q *queue.Queue, h *twice) {
			ctx := context.Background()
			now := q.Now()
			running := job(t, "r")
			running.Keyed, running.Key = true, "k"
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{running}, now); err != nil {
				t.Fatal(err)
			}
			fetchAll(t, q, 1, now, now.Add(time.Minute))
			q.Client().HSet(ctx, q.Keys("r").Flows(), "t|k", "- 0 "+running.ID)
			drop, cancel := job(t, "r"), job(t, "r")
			drop.Keyed, drop.Key, drop.OnBusy, drop.BusyCap = true, "k", queue.OnBusyDrop, 1
			cancel.Keyed, cancel.Key, cancel.OnBusy, cancel.BusyCap = true, "k", queue.OnBusyCancelRunning, 1
			h.during(func() {
				holders, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{drop}, now)
				if err != nil || holders[0] != queue.BusyHolder {
					t.Fatalf("drop = %q, %v; want it refused, the key busy", holders, err)
				}
				if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{cancel}, now); err != nil {
					t.Fatal(err)
				}
			})
			if ok, _ := q.Client().SIsMember(ctx, q.Keys("r").Cancels(), running.ID).Result(); !ok {
				t.Fatal("the running job was not asked to cancel")
			}
		}},
	})
}

// A worker that takes only some tasks (FetchTypes, claim.lua) sets an
// expired job aside too: it is ended expired, never leased.
func TestExpire_AJobFoundExpiredByATypedFetchIsEndedNotLeased(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := q.Now()
		late, fresh := expiring(t, "r", now.Add(time.Second)), expiring(t, "r", now.Add(time.Hour))
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{late, fresh}, now); err != nil {
			t.Fatal(err)
		}
		later := now.Add(2 * time.Second)
		ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"x"}, 4, later.Add(time.Minute), later)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].ID != fresh.ID {
			t.Fatalf("typed fetch took %d jobs, want only %s", len(ds), fresh.ID)
		}
		requireExpired(t, q, late.ID)
	})
}
