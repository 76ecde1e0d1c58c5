package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Every counted transition adds to the minute it happened in, in Redis, so
// any process reads the same stats series: enqueues (plain, checked and fired by
// cron),
// successes with their wait and run-time buckets, failures that retry, deaths
// and cancels.
func TestSeries_EachTransitionCountsInItsMinute(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := q.Now()
		plain := []queue.NewJob{job(t, "r"), job(t, "r"), job(t, "r")}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, plain, now); err != nil {
			t.Fatal(err)
		}
		checked := job(t, "r")
		checked.ChosenID = true
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{checked}, now); err != nil {
			t.Fatal(err)
		}
		if out, err := q.Jobs.Cancel(ctx, checked.ID, []byte("canceled"), time.Minute); out != queue.Canceled || err != nil {
			t.Fatalf("cancel = %v, %v", out, err)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 3, now.Add(time.Minute), now)
		if err != nil || len(ds) != 3 {
			t.Fatalf("fetch = %d jobs, %v", len(ds), err)
		}
		if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		fail := func(d *queue.Dispatch, final bool, want queue.Ending) {
			t.Helper()
			out, err := q.Jobs.Fail(ctx, d, queue.Failure{Message: "boom", RetryAt: now, Final: final, Record: []byte("x"), TTL: time.Minute}, now)
			if out != want || err != nil {
				t.Fatalf("fail = %v, %v; want %v", out, err, want)
			}
		}
		fail(ds[1], false, queue.EndRetrying)
		fail(ds[2], true, queue.EndDead)
		if fired, err := q.FireCron(ctx, cronFire(t, now.Truncate(time.Second)), now); !fired || err != nil {
			t.Fatalf("fire cron = %v, %v", fired, err)
		}

		minutes, err := q.Ops.Series(ctx, []string{"r", "other"}, now.Add(-time.Minute), q.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var sum queue.Minute
		for _, m := range minutes {
			sum.Add(m)
		}
		want := map[string]int64{queue.SeriesEnqueued: 5, queue.SeriesProcessed: 1, queue.SeriesFailed: 2,
			queue.SeriesRetried: 1, queue.SeriesDead: 1, queue.SeriesCanceled: 1}
		for what, n := range want {
			if sum.Counts[what] != n {
				t.Errorf("series %q = %d, want %d (all: %v)", what, sum.Counts[what], n, sum.Counts)
			}
		}
		var waits, runs int64
		for i := range sum.Wait {
			waits += sum.Wait[i]
			runs += sum.Run[i]
		}
		if waits != 1 || runs != 1 {
			t.Errorf("time buckets: %d waits and %d runs, want one of each (the ack)", waits, runs)
		}
		if len(minutes) < 3 || !minutes[0].At.Equal(now.Add(-time.Minute).Truncate(time.Minute)) {
			t.Errorf("minutes from %v: %d, first at %v; want every minute of the window from its first", now.Add(-time.Minute), len(minutes), minutes[0].At)
		}
	})
}

// A series key holding garbage (another type, fields that are no count)
// neither fails the transition that counts in it nor the read.
func TestSeries_GarbageNeitherFailsACountNorTheRead(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := q.Now()
		key := q.Keys("r").Series(queue.HourOf(now))
		if err := q.Client().Set(ctx, key, "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatalf("enqueue with a garbage series key: %v", err)
		}
		if err := q.Client().HSet(ctx, key, "x:e", "1", "61:e", "1", "3:e", "lots").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Ops.Series(ctx, []string{"r"}, now, now); err != nil {
			t.Fatalf("read of garbage series: %v", err)
		}
	})
}
