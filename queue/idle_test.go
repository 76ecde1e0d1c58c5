package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// waitOn registers n workers as waiting on route r (each one's fetch found
// nothing) and returns their wake channels, in registration order.
func waitOn(t *testing.T, q *queue.Queue, r string, n int, until time.Time) []string {
	t.Helper()
	ctx := context.Background()
	var channels []string
	for i := range n {
		ch := q.Keys(r).WakeChannelOf(fmt.Sprintf("w%d", i))
		ds, err := q.Jobs.FetchOrWait(ctx, r, queue.Priorities, 4, time.Now().Add(time.Minute), time.Now(), queue.Waiter{Channel: ch, Until: until})
		if err != nil || len(ds) != 0 {
			t.Fatalf("fetch of waiting worker %d = %d jobs, %v", i, len(ds), err)
		}
		channels = append(channels, ch)
	}
	return channels
}

// woken counts the wake-ups published on the channels, for a moment after
// each call of push.
func woken(t *testing.T, q *queue.Queue, channels []string, push func()) map[string]int {
	t.Helper()
	ctx := context.Background()
	sub := plainClient(t, q).Subscribe(ctx, channels...)
	defer sub.Close()
	for range channels {
		if _, err := sub.Receive(ctx); err != nil { // each subscription is in place
			t.Fatal(err)
		}
	}
	push()
	got := map[string]int{}
	for {
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		m, err := sub.ReceiveMessage(wctx)
		cancel()
		if err != nil {
			return got
		}
		got[m.Channel]++
	}
}

func idleCount(t *testing.T, q *queue.Queue, r string) int64 {
	t.Helper()
	n, err := q.Client().ZCard(context.Background(), q.Keys(r).Idle()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPush_WakesOneWaitingWorkerPerJobNotEveryOne(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		channels := waitOn(t, q, "r", 6, time.Now().Add(time.Minute))
		got := woken(t, q, channels, func() {
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r"), job(t, "r")}, time.Now()); err != nil {
				t.Fatal(err)
			}
		})
		total := 0
		for ch, n := range got {
			if n != 1 {
				t.Errorf("worker %s woken %d times for one push", ch, n)
			}
			total += n
		}
		if total != 2 {
			t.Fatalf("a push of 2 jobs woke %d of 6 waiting workers (%v), want 2", total, got)
		}
		// The last to register is woken first: the likeliest alive and warm.
		if got[channels[5]] != 1 || got[channels[4]] != 1 {
			t.Errorf("woken %v, want the two registered last (%s, %s)", got, channels[5], channels[4])
		}
		if n := idleCount(t, q, "r"); n != 4 {
			t.Errorf("%d workers still waiting, want 4", n)
		}
	})
}

func TestFetchOrWait_AWorkerThatTookEveryJobItAskedForDoesNotWait(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r"), job(t, "r"), job(t, "r")}, time.Now()); err != nil {
			t.Fatal(err)
		}
		w := queue.Waiter{Channel: q.Keys("r").WakeChannelOf("w"), Until: time.Now().Add(time.Minute)}
		ds, err := q.Jobs.FetchOrWait(ctx, "r", queue.Priorities, 2, time.Now().Add(time.Minute), time.Now(), w)
		if err != nil || len(ds) != 2 {
			t.Fatalf("fetch = %d jobs, %v", len(ds), err)
		}
		if n := idleCount(t, q, "r"); n != 0 {
			t.Fatalf("a worker whose fetch was filled waits (%d entries); it has no free slot", n)
		}
		ds, err = q.Jobs.FetchOrWait(ctx, "r", queue.Priorities, 2, time.Now().Add(time.Minute), time.Now(), w)
		if err != nil || len(ds) != 1 {
			t.Fatalf("second fetch = %d jobs, %v", len(ds), err)
		}
		if n := idleCount(t, q, "r"); n != 1 {
			t.Fatalf("a worker whose fetch came back short does not wait (%d entries)", n)
		}
	})
}

func TestPush_WakesNoWorkerWhoseEntryLapsed(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		lapsed := waitOn(t, q, "r", 2, time.Now().Add(-time.Second))
		got := woken(t, q, lapsed, func() {
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, time.Now()); err != nil {
				t.Fatal(err)
			}
		})
		if len(got) != 0 {
			t.Fatalf("workers whose entries lapsed were woken: %v", got)
		}
		if n := idleCount(t, q, "r"); n != 0 {
			t.Fatalf("%d lapsed entries left in the idle set", n)
		}
	})
}

func TestPush_AnIdleKeyOfAnotherTypeIsDroppedAndTheJobsStillGoIn(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Client().Set(ctx, q.Keys("r").Idle(), "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, time.Now()); err != nil {
			t.Fatalf("enqueue beside a garbage idle key: %v", err)
		}
		if typ := q.Client().Type(ctx, q.Keys("r").Idle()).Val(); typ != "none" {
			t.Fatalf("garbage idle key left as a %s", typ)
		}
		if err := q.Client().Set(ctx, q.Keys("r").Idle(), "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
		w := queue.Waiter{Channel: q.Keys("r").WakeChannelOf("w"), Until: time.Now().Add(time.Minute)}
		ds, err := q.Jobs.FetchOrWait(ctx, "r", queue.Priorities, 4, time.Now().Add(time.Minute), time.Now(), w)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch beside a garbage idle key = %d jobs, %v", len(ds), err)
		}
		if n := idleCount(t, q, "r"); n != 1 {
			t.Fatalf("the worker does not wait after a garbage idle key (%d entries)", n)
		}
	})
}

func TestWakeWaiters_HandsAWakeUpOnAndStopWaitingLeaves(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		channels := waitOn(t, q, "r", 3, time.Now().Add(time.Minute))
		if err := q.Jobs.StopWaiting(ctx, []string{"r", "other"}, "w2"); err != nil {
			t.Fatal(err)
		}
		got := woken(t, q, channels, func() {
			if n, err := q.Jobs.WakeWaiters(ctx, "r", 1); n != 1 || err != nil {
				t.Fatalf("WakeWaiters = %d, %v", n, err)
			}
		})
		if len(got) != 1 || got[channels[1]] != 1 {
			t.Fatalf("woken %v, want only %s (w2 stopped waiting)", got, channels[1])
		}
	})
}

func TestResume_WakesEveryWaitingWorker(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Ops.Pause(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, time.Now()); err != nil {
			t.Fatal(err)
		}
		channels := waitOn(t, q, "r", 3, time.Now().Add(time.Minute)) // paused: they take nothing and wait
		got := woken(t, q, channels, func() {
			if err := q.Ops.Resume(ctx, "r"); err != nil {
				t.Fatal(err)
			}
		})
		if len(got) != 3 {
			t.Fatalf("resume woke %v, want all 3 waiting workers", got)
		}
	})
}
