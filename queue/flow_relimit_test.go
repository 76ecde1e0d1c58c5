package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// A key held back by its task's limits sees new limits at once: a deploy
// that removes or raises a rate of 1/h must not leave its keys waiting out
// the old hour, nor a raised cap its keys parked until a job ends.
func TestSetTaskLimits_AKeyHeldByOldLimitsStartsAtOnceUnderNewOnes(t *testing.T) {
	cases := []struct {
		name     string
		old, new queue.Limits
	}{
		{"rate removed", queue.Limits{Rate: 1, Per: time.Hour}, queue.Limits{}},
		{"rate raised", queue.Limits{Rate: 1, Per: time.Hour}, queue.Limits{Rate: 100, Per: time.Second}},
		{"cap raised", queue.Limits{MaxRunning: 1}, queue.Limits{MaxRunning: 2}},
		{"cap removed", queue.Limits{MaxRunning: 1}, queue.Limits{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				if err := q.Flows.SetTaskLimits(ctx, "relimit", "t", c.old); err != nil {
					t.Fatal(err)
				}
				ids := enqueueKeyed(t, q, "relimit", queue.Normal, "t", "k", 2)
				if got, _ := fetchIDs(t, q, "relimit", 5); len(got) != 1 || got[0] != ids[0] {
					t.Fatalf("took %v, want the key's first job alone", got)
				}
				if got, _ := fetchIDs(t, q, "relimit", 5); len(got) != 0 {
					t.Fatalf("took %v while the old limits hold the key", got)
				}
				if err := q.Flows.SetTaskLimits(ctx, "relimit", "t", c.new); err != nil {
					t.Fatal(err)
				}
				// A second on: a raised rate counts the old one's spent
				// starts as its burst spent, and allows the next start one
				// of its own intervals on.
				ds := fetchAt(t, q, "relimit", 5, q.Now().Add(time.Second), time.Minute)
				if len(ds) != 1 || ds[0].ID != ids[1] {
					t.Fatalf("a second after the limits changed took %d jobs, want the key's second job %s", len(ds), ids[1])
				}
			})
		})
	}
}

// A route's rate raised: the old rate's spent starts count as the new
// one's burst spent, and the next start is one new interval on, not when
// the old rate would have allowed it.
func TestSetRouteLimits_ARaisedRateAllowsTheNextStartWithinItsInterval(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetRouteLimits(ctx, "raised", queue.Limits{Rate: 1, Per: time.Hour}); err != nil {
			t.Fatal(err)
		}
		jobs := []queue.NewJob{job(t, "raised"), job(t, "raised")}
		if _, err := q.Jobs.Enqueue(ctx, "raised", queue.Normal, jobs, q.Now()); err != nil {
			t.Fatal(err)
		}
		now := q.Now()
		if ds := fetchAt(t, q, "raised", 5, now, time.Minute); len(ds) != 1 {
			t.Fatalf("took %d jobs under 1/h, want 1", len(ds))
		}
		if err := q.Flows.SetRouteLimits(ctx, "raised", queue.Limits{Rate: 100, Per: time.Second}); err != nil {
			t.Fatal(err)
		}
		var got int
		for _, at := range []time.Duration{time.Second, time.Second + 20*time.Millisecond} {
			got += len(fetchAt(t, q, "raised", 5, now.Add(at), time.Minute))
		}
		if got != 1 {
			t.Fatalf("took %d jobs in the 20 ms after a look under 100/s, want the second job", got)
		}
	})
}

// A key that its task lets start but the route's own rate holds back shows
// the route's rate as why it waits.
func TestFlows_AKeyHeldByTheRoutesRateSaysSo(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetRouteLimits(ctx, "routerate", queue.Limits{Rate: 1, Per: time.Hour}); err != nil {
			t.Fatal(err)
		}
		enqueueKeyed(t, q, "routerate", queue.Normal, "t", "A", 2)
		if got, _ := fetchIDs(t, q, "routerate", 5); len(got) != 1 {
			t.Fatalf("took %v under the route's 1/h, want one job", got)
		}
		st, err := q.Flows.State(ctx, "routerate", 10)
		if err != nil {
			t.Fatal(err)
		}
		if st.Held != 1 || len(st.Busiest) != 1 || st.Busiest[0].ByRoute != "rate" {
			t.Fatalf("state %+v, want key A held by the route's rate", st)
		}
	})
}
