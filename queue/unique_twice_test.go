package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// uniqueTwiceCases run every script that takes, moves or frees a unique key
// twice with the same arguments (a resend after a lost reply): the second
// run must leave the key, and everything else, as the first left it.
var uniqueTwiceCases = []twiceCase{
	{"enqueue: ready, scheduled, a duplicate and a debounce", func(t *testing.T, q *queue.Queue, h *twice) {
		now := time.Now()
		later := uniqueJob(t, "later", queue.UntilEnded)
		later.Debounce, later.DebounceMax, later.RunAt = time.Second, time.Minute, now.Add(time.Second)
		again := uniqueJob(t, "later", queue.UntilEnded)
		again.Debounce, again.DebounceMax, again.RunAt, again.Envelope = time.Second, time.Minute, now.Add(time.Second), []byte("other args")
		h.during(func() {
			enqueueUnique(t, q, uniqueJob(t, "ready", queue.UntilStarted), now)
			enqueueUnique(t, q, uniqueJob(t, "ready", queue.UntilStarted), now)
			enqueueUnique(t, q, later, now)
			if got := enqueueUnique(t, q, again, now.Add(500*time.Millisecond)); got != queue.DebouncedMark+later.ID {
				t.Fatalf("debounced enqueue answered %q", got)
			}
		})
	}},
	{"fetch frees keys held until started; ack, death and cancel free theirs", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		for _, j := range []queue.NewJob{uniqueJob(t, "s", queue.UntilStarted), uniqueJob(t, "e1", queue.UntilEnded),
			uniqueJob(t, "e2", queue.UntilEnded), uniqueJob(t, "c", queue.UntilCompleted)} {
			j.MaxRetries = 0
			enqueueUnique(t, q, j, now)
		}
		h.during(func() {
			ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 4, now.Add(time.Minute), now)
			if err != nil || len(ds) != 4 {
				t.Fatalf("fetch = %d, %v", len(ds), err)
			}
			if ok, err := q.Jobs.Ack(ctx, ds[3], []byte("ok"), time.Minute); !ok || err != nil {
				t.Fatalf("ack = %v, %v", ok, err)
			}
			f := queue.Failure{Message: "boom", Final: true, Record: []byte("rec"), TTL: time.Minute}
			if out, err := q.Jobs.Fail(ctx, ds[1], f, now); out != queue.EndDead || err != nil {
				t.Fatalf("fail = %v, %v", out, err)
			}
			if ok, err := q.Jobs.FinishCanceled(ctx, ds[2], []byte("canceled"), time.Minute); !ok || err != nil {
				t.Fatalf("finish canceled = %v, %v", ok, err)
			}
		})
		for _, key := range []string{"s", "e1", "e2", "c"} {
			if got := holderOf(t, q, key); got != "" {
				t.Fatalf("key %s still held by %s", key, got)
			}
		}
	}},
	{"reap frees a dead job's key; cancel and delete free a waiting job's", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		reaped := uniqueJob(t, "reaped", queue.UntilEnded)
		reaped.MaxRetries = 0
		enqueueUnique(t, q, reaped, now)
		fetchAll(t, q, 1, now, now.Add(time.Second))
		canceled, deleted := uniqueJob(t, "canceled", queue.UntilEnded), uniqueJob(t, "deleted", queue.UntilStarted)
		enqueueUnique(t, q, canceled, now)
		enqueueUnique(t, q, deleted, now)
		h.during(func() {
			if out, err := q.Jobs.Reap(ctx, "r", now.Add(2*time.Second), verdict(now)); err != nil || out[reaped.ID] != queue.EndDead {
				t.Fatalf("reap = %v, %v", out, err)
			}
			if out, err := q.Jobs.Cancel(ctx, canceled.ID, []byte("canceled"), time.Minute); out != queue.Canceled || err != nil {
				t.Fatalf("cancel = %v, %v", out, err)
			}
			if err := q.Jobs.Delete(ctx, deleted.ID); err != nil {
				t.Fatal(err)
			}
		})
		for _, key := range []string{"reaped", "canceled", "deleted"} {
			if got := holderOf(t, q, key); got != "" {
				t.Fatalf("key %s still held by %s", key, got)
			}
		}
	}},
	{"a shutdown's hand-back keeps the key, its cancel frees it", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		kept, freed := uniqueJob(t, "kept", queue.UntilEnded), uniqueJob(t, "freed", queue.UntilEnded)
		enqueueUnique(t, q, kept, now)
		enqueueUnique(t, q, freed, now)
		ds := fetchAll(t, q, 2, now, now.Add(time.Minute))
		q.Client().SAdd(ctx, q.Keys("r").Cancels(), freed.ID)
		h.during(func() {
			for _, d := range ds {
				if _, err := q.Jobs.Requeue(ctx, d, []byte("canceled"), time.Minute, now); err != nil {
					t.Fatal(err)
				}
			}
		})
		if holderOf(t, q, "kept") != kept.ID || holderOf(t, q, "freed") != "" {
			t.Fatalf("keys held by %q and %q", holderOf(t, q, "kept"), holderOf(t, q, "freed"))
		}
	}},
	{"replay takes a dead job's key back, and is refused while another job holds it", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		var dead []string
		for _, key := range []string{"back", "taken"} {
			j := uniqueJob(t, key, queue.UntilEnded)
			j.MaxRetries = 0
			enqueueUnique(t, q, j, now)
			d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
			f := queue.Failure{Message: "boom", Final: true, Record: []byte("rec"), TTL: time.Minute}
			if out, err := q.Jobs.Fail(ctx, d, f, now); out != queue.EndDead || err != nil {
				t.Fatalf("fail = %v, %v", out, err)
			}
			dead = append(dead, j.ID)
		}
		taker := uniqueJob(t, "taken", queue.UntilEnded)
		taker.RunAt = now.Add(time.Hour)
		enqueueUnique(t, q, taker, now)
		h.during(func() {
			if err := q.Ops.Replay(ctx, dead[0]); err != nil {
				t.Fatal(err)
			}
			if err := q.Ops.Replay(ctx, dead[1]); err == nil {
				t.Fatal("replay of a job whose key another job holds went through")
			}
		})
		if holderOf(t, q, "back") != dead[0] || holderOf(t, q, "taken") != taker.ID {
			t.Fatalf("keys held by %q and %q", holderOf(t, q, "back"), holderOf(t, q, "taken"))
		}
	}},
	{"expiry frees the keys of jobs a fetch sets aside expired (the sweep then finds none)", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		ended, started := uniqueJob(t, "ended", queue.UntilEnded), uniqueJob(t, "started", queue.UntilStarted)
		kept := uniqueJob(t, "kept", queue.UntilCompleted)
		for _, j := range []queue.NewJob{ended, started, kept} {
			j.ExpireAt = now.Add(time.Second)
			enqueueUnique(t, q, j, now)
		}
		later := now.Add(2 * time.Second)
		h.during(func() {
			if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 4, later.Add(time.Minute), later); err != nil || len(ds) != 0 {
				t.Fatalf("fetch = %d, %v; want every job set aside expired", len(ds), err)
			}
			if _, err := q.Jobs.ExpireDue(ctx, "r", later); err != nil {
				t.Fatal(err)
			}
		})
		if holderOf(t, q, "ended") != "" || holderOf(t, q, "started") != "" || holderOf(t, q, "kept") != kept.ID {
			t.Fatalf("keys held by %q, %q, %q; want only kept's, by %s", holderOf(t, q, "ended"), holderOf(t, q, "started"), holderOf(t, q, "kept"), kept.ID)
		}
	}},
	{"a lost fetch's hand-back frees the key of the job it ends canceled", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		asked, other := uniqueJob(t, "asked", queue.UntilEnded), uniqueJob(t, "other", queue.UntilEnded)
		enqueueUnique(t, q, asked, now)
		enqueueUnique(t, q, other, now)
		ds := fetchAll(t, q, 2, now, now.Add(time.Minute))
		q.Client().SAdd(ctx, q.Keys("r").Cancels(), asked.ID)
		lost := &queue.LostFetch{Route: "r", Token: ds[0].Token, Until: now.Add(time.Minute)}
		h.during(func() {
			if _, err := q.Jobs.HandBack(ctx, lost, now, canceledVerdict); err != nil {
				t.Fatal(err)
			}
		})
		if holderOf(t, q, "asked") != "" || holderOf(t, q, "other") != other.ID {
			t.Fatalf("keys held by %q and %q; want only other's, by %s", holderOf(t, q, "asked"), holderOf(t, q, "other"), other.ID)
		}
	}},
}

func TestUnique_EveryScriptRunTwiceKeepsTheKeysState(t *testing.T) {
	runTwiceCases(t, uniqueTwiceCases)
}
