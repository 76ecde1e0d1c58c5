package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// A run whose lease ran out keeps when it started, as a run that failed
// does: the reaper reads the start off the lease's token. A replay drops the
// starts with the failures of the life it ends.
func TestReap_ALostRunKeepsItsStart(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		j := job(t, "r")
		j.MaxRetries = 0
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %v, %v", ds, err)
		}
		later := now.Add(2 * time.Minute)
		got, err := q.Jobs.Reap(ctx, "r", later, func(queue.Expired) queue.Verdict {
			return queue.Verdict{RetryAt: later, Record: []byte("lost"), TTL: time.Minute}
		})
		if err != nil || got[j.ID] != queue.EndDead {
			t.Fatalf("reap = %v, %v; want the job dead (no retries)", got, err)
		}
		s, err := q.Jobs.Lookup(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.FailedAt) != 1 || len(s.FailedStartedAt) != 1 || !s.FailedStartedAt[0].Equal(ds[0].StartedAt().Truncate(time.Millisecond)) {
			t.Fatalf("failed at %v, started at %v; want the lost run's start %v", s.FailedAt, s.FailedStartedAt, ds[0].StartedAt())
		}
		if err := q.Ops.Replay(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		if f, _ := q.Client().HGetAll(ctx, q.Keys("r").Job(j.ID)).Result(); f["sa1"] != "" || f["fa1"] != "" {
			t.Fatalf("after a replay the job hash keeps sa1=%q fa1=%q; want the ended life's runs gone", f["sa1"], f["fa1"])
		}
	})
}
