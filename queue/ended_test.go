package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// endedOf reads every record waiting in route's ended list.
func endedOf(t *testing.T, q *queue.Queue, route string) []string {
	t.Helper()
	recs, err := q.Ended.Head(context.Background(), route, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r)
	}
	return out
}

// fetchOne enqueues one job with maxRetries and leases it.
func fetchOne(t *testing.T, q *queue.Queue, route string, maxRetries int, now time.Time) *queue.Dispatch {
	t.Helper()
	ctx := context.Background()
	j := job(t, route)
	j.MaxRetries = maxRetries
	if _, err := q.Jobs.Enqueue(ctx, route, queue.Normal, []queue.NewJob{j}, now); err != nil {
		t.Fatal(err)
	}
	ds, err := q.Jobs.Fetch(ctx, route, queue.Priorities, 1, now.Add(time.Minute), now)
	if err != nil || len(ds) != 1 {
		t.Fatalf("fetch = %v, %v", ds, err)
	}
	return ds[0]
}

func TestEnded_EveryEndForGoodWaitsInTheListWhenKept(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		q.Ended.Keep(true)
		if ok, err := q.Jobs.Ack(ctx, fetchOne(t, q, "r", 0, now), []byte("completed"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		// A failure with a retry left is not an end: only the dead one is.
		d := fetchOne(t, q, "r", 1, now)
		if out, err := q.Jobs.Fail(ctx, d, queue.Failure{Message: "boom", RetryAt: now, Record: []byte("dead"), TTL: time.Minute}, now); out != queue.EndRetrying || err != nil {
			t.Fatalf("fail = %v, %v", out, err)
		}
		if got := endedOf(t, q, "r"); len(got) != 1 || got[0] != "completed" {
			t.Fatalf("after an ack and a retry, ended = %q; want the completed record alone", got)
		}
		if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("refetch = %v, %v", ds, err)
		}
		if out, err := q.Jobs.Fail(ctx, ds[0], queue.Failure{Message: "boom", RetryAt: now, Record: []byte("dead"), TTL: time.Minute}, now); out != queue.EndDead || err != nil {
			t.Fatalf("last fail = %v, %v", out, err)
		}
		j := job(t, "r")
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Cancel(ctx, j.ID, []byte("canceled"), time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := endedOf(t, q, "r"); len(got) != 3 || got[0] != "completed" || got[1] != "dead" || got[2] != "canceled" {
			t.Fatalf("ended = %q; want completed, dead, canceled, oldest first", got)
		}
	})
}

func TestEnded_NothingKeptWhenTheQueueKeepsNoHistory(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		if ok, err := q.Jobs.Ack(ctx, fetchOne(t, q, "r", 0, now), []byte("completed"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		if n, err := q.Client().Exists(ctx, q.Keys("r").Ended()).Result(); err != nil || n != 0 {
			t.Fatalf("ended list exists = %d, %v; want none without KeepEnded", n, err)
		}
	})
}

func TestStored_DropsOnlyTheRecordsReadAndStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		k := q.Keys("r")
		if err := q.Client().RPush(ctx, k.Ended(), "a", "b", "c").Err(); err != nil {
			t.Fatal(err)
		}
		read, err := q.Ended.Head(ctx, "r", 2)
		if err != nil || len(read) != 2 {
			t.Fatalf("ended = %q, %v", read, err)
		}
		if ok, err := q.Ended.Stored(ctx, "r", read); !ok || err != nil {
			t.Fatalf("stored = %v, %v", ok, err)
		}
		// A second run (a lost reply resent), or a second worker that read
		// the same head, drops nothing more.
		if ok, err := q.Ended.Stored(ctx, "r", read); ok || err != nil {
			t.Fatalf("stored again = %v, %v; want false", ok, err)
		}
		if got := endedOf(t, q, "r"); len(got) != 1 || got[0] != "c" {
			t.Fatalf("left = %q; want c", got)
		}
	})
}

func TestShed_DropsTheOldestPastTheCapAndCountsThem(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		k := q.Keys("r")
		if err := q.Client().RPush(ctx, k.Ended(), "1", "2", "3", "4", "5").Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Ended.Shed(ctx, "r", 3); n != 2 || err != nil {
			t.Fatalf("shed = %d, %v; want 2", n, err)
		}
		if n, err := q.Ended.Shed(ctx, "r", 3); n != 0 || err != nil {
			t.Fatalf("shed again = %d, %v; want 0", n, err)
		}
		if got := endedOf(t, q, "r"); len(got) != 3 || got[0] != "3" {
			t.Fatalf("left = %q; want 3, 4, 5", got)
		}
		if v, err := q.Client().HGet(ctx, k.Stats(), "history_dropped").Result(); v != "2" || err != nil {
			t.Fatalf("history_dropped = %q, %v; want 2", v, err)
		}
	})
}

func TestEnded_GarbageUnderTheListDoesNotStopAnAck(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		q.Ended.Keep(true)
		if err := q.Client().Set(ctx, q.Keys("r").Ended(), "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := endedOf(t, q, "r"); len(got) != 0 {
			t.Fatalf("garbage read as %q; want nothing", got)
		}
		if ok, err := q.Jobs.Ack(ctx, fetchOne(t, q, "r", 0, now), []byte("completed"), time.Minute); !ok || err != nil {
			t.Fatalf("ack over garbage = %v, %v", ok, err)
		}
		if got := endedOf(t, q, "r"); len(got) != 1 || got[0] != "completed" {
			t.Fatalf("ended = %q; want the record in a list that replaced the garbage", got)
		}
	})
}

func TestDepths_CountTheEndedListAndReadGarbageThereAsNone(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Client().RPush(ctx, q.Keys("r").Ended(), "a", "b").Err(); err != nil {
			t.Fatal(err)
		}
		if err := q.Client().Set(ctx, q.Keys("s").Ended(), "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Ops.Depths(ctx, []string{"r", "s"})
		if err != nil || ds[0].Ended != 2 || ds[1].Ended != 0 {
			t.Fatalf("depths = %+v, %v; want 2 ended on r, none on s", ds, err)
		}
	})
}
