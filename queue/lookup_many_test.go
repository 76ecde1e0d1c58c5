package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// LookupMany reads several jobs in one round trip as Lookup reads each, a
// job not found as nil.
func TestLookupMany_ReadsEachJobAsLookupDoes(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, now := context.Background(), time.Now()
		a, b := job(t, "r"), job(t, "s")
		b.RunAt = now.Add(time.Hour)
		for _, j := range []queue.NewJob{a, b} {
			route, _ := queue.RouteOf(j.ID)
			if _, err := q.Jobs.Enqueue(ctx, route, queue.Normal, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
		}
		gone := queue.NewID("r", now)
		got, err := q.Jobs.LookupMany(ctx, []string{a.ID, gone, b.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got[0] == nil || got[0].Status != queue.StatusPending || got[1] != nil || got[2] == nil || got[2].Status != queue.StatusScheduled {
			t.Fatalf("LookupMany = %+v, %+v, %+v; want pending, nil, scheduled", got[0], got[1], got[2])
		}
	})
}
