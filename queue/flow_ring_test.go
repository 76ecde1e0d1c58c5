package queue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// Tests of the ring: the round-robin of a route's flows, and what puts a
// flow back in it when garbage took it out.

func TestFlow_RingServesKeysInTurnOneJobEach(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		a := enqueueKeyed(t, q, "turns", queue.Normal, "t", "A", 3)
		b := enqueueKeyed(t, q, "turns", queue.Normal, "t", "B", 3)
		var got []string
		for range 4 {
			ids, _ := fetchIDs(t, q, "turns", 1)
			got = append(got, ids...)
		}
		if want := []string{a[0], b[0], a[1], b[1]}; !slices.Equal(got, want) {
			t.Fatalf("four one-job fetches took %v, want A1 B1 A2 B2 %v", got, want)
		}
	})
}

func TestFlow_AKeyPushedTwiceTakesOneTurnARound(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		// A's only job deleted while A waits in the ring, then A's next
		// jobs enqueued: A finds no job waiting and joins the ring again.
		gone := enqueueKeyed(t, q, "dup", queue.Normal, "t", "A", 1)
		b := enqueueKeyed(t, q, "dup", queue.Normal, "t", "B", 3)
		if err := q.Jobs.Delete(ctx, gone[0]); err != nil {
			t.Fatal(err)
		}
		a := enqueueKeyed(t, q, "dup", queue.Normal, "t", "A", 3)
		var got []string
		for range 4 {
			ids, _ := fetchIDs(t, q, "dup", 1)
			got = append(got, ids...)
		}
		if want := []string{a[0], b[0], a[1], b[1]}; !slices.Equal(got, want) {
			t.Fatalf("four one-job fetches took %v, want A1 B1 A2 B2 %v: one turn a key a round", got, want)
		}
	})
}

// drainKeyed fetches and acks every job of route, at times an hour apart on
// Redis's clock (so that no rate holds a flow), until every id of want ran
// or the deadline passes. With sweep, it sweeps the route's flows when a
// fetch finds nothing, as a worker's reaper does now and then.
func drainKeyed(t *testing.T, q *queue.Queue, route string, want []string, sweep bool) {
	t.Helper()
	ctx := context.Background()
	left := map[string]bool{}
	for _, id := range want {
		left[id] = true
	}
	now := q.Now()
	deadline := time.Now().Add(5 * time.Second)
	for len(left) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs never ran: %v", len(left), len(want), left)
		}
		now = now.Add(time.Hour)
		ds := fetchAt(t, q, route, 10, now, time.Minute)
		for _, d := range ds {
			delete(left, d.ID)
			if _, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if len(ds) == 0 && sweep {
			if _, err := q.Flows.Sweep(ctx, route, now); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestFlow_GarbageInAFlowKeyStrandsNoKey(t *testing.T) {
	cases := []struct {
		name   string
		limits queue.Limits
		sweep  bool // a script that meets the garbage cannot tell: the sweep repairs it
		spoil  func(ctx context.Context, q *queue.Queue, k queue.Keys) error
	}{
		{"ring of another type", queue.Limits{}, false, func(ctx context.Context, q *queue.Queue, k queue.Keys) error {
			q.Client().Del(ctx, k.Ring(queue.Normal))
			return q.Client().Set(ctx, k.Ring(queue.Normal), "junk", 0).Err()
		}},
		{"held of another type", queue.Limits{Rate: 1, Per: time.Hour}, false, func(ctx context.Context, q *queue.Queue, k queue.Keys) error {
			q.Client().Del(ctx, k.Held())
			return q.Client().Set(ctx, k.Held(), "junk", 0).Err()
		}},
		{"flows of another type", queue.Limits{MaxRunning: 1}, false, func(ctx context.Context, q *queue.Queue, k queue.Keys) error {
			q.Client().Del(ctx, k.Flows())
			return q.Client().Set(ctx, k.Flows(), "junk", 0).Err()
		}},
		{"one flow's state garbage", queue.Limits{MaxRunning: 1}, true, func(ctx context.Context, q *queue.Queue, k queue.Keys) error {
			return q.Client().HSet(ctx, k.Flows(), "t|A", "garbage").Err()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				route := "strand"
				k := q.Keys(route)
				if err := q.Flows.SetTaskLimits(ctx, route, "t", c.limits); err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, key := range []string{"A", "B", "C"} {
					want = append(want, enqueueKeyed(t, q, route, queue.Normal, "t", key, 3)...)
				}
				// One fetch: every key starts a job, and is then back in
				// the ring, parked at its cap or held by its rate.
				first := fetchAt(t, q, route, 3, q.Now(), time.Minute)
				if len(first) != 3 {
					t.Fatalf("first fetch took %d jobs, want one of each key", len(first))
				}
				if err := c.spoil(ctx, q, k); err != nil {
					t.Fatal(err)
				}
				for _, d := range first {
					if _, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); err != nil {
						t.Fatal(err)
					}
				}
				var rest []string
				for _, id := range want {
					if !slices.ContainsFunc(first, func(d *queue.Dispatch) bool { return d.ID == id }) {
						rest = append(rest, id)
					}
				}
				drainKeyed(t, q, route, rest, c.sweep)
				// The keys' next jobs run at once, with no sweep.
				for _, key := range []string{"A", "B", "C"} {
					late := enqueueKeyed(t, q, route, queue.Normal, "t", key, 1)
					ds := fetchAt(t, q, route, 10, q.Now().Add(100*time.Hour), time.Minute)
					if len(ds) != 1 || ds[0].ID != late[0] {
						t.Fatalf("key %s's next job %s: the fetch took %d jobs", key, late[0], len(ds))
					}
					if _, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
}

// Real Redis only: the embedded server's range by lex reads its set from
// the start, so ten thousand flows take it minutes.
func TestSweepFlows_LooksAtBoundedFlowsACallAndResumes(t *testing.T) {
	t.Parallel()
	q, err := queue.New(redistest.Shared(t).Client(t), redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const keys = 10_050 // more flows than one sweep looks at
	jobs := make([]queue.NewJob, keys)
	for i := range jobs {
		jobs[i] = keyedJob(t, "many", "t", fmt.Sprint(i))
	}
	for first := 0; first < keys; first += 1000 {
		if _, err := q.Jobs.Enqueue(ctx, "many", queue.Normal, jobs[first:min(first+1000, keys)], q.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// The ring deleted by hand: no script can tell that its flows are
	// gone, and only the sweep finds them.
	if err := q.Client().Del(ctx, q.Keys("many").Ring(queue.Normal)).Err(); err != nil {
		t.Fatal(err)
	}
	var swept []int
	for range 3 {
		n, err := q.Flows.Sweep(ctx, "many", q.Now())
		if err != nil {
			t.Fatal(err)
		}
		swept = append(swept, n)
	}
	if !slices.Equal(swept, []int{10_000, 50, 0}) {
		t.Fatalf("three sweeps put back %v flows, want 10,000 (one sweep's bound), the 50 left, then none", swept)
	}
	if got, _ := fetchIDs(t, q, "many", 1); len(got) != 1 || got[0] != jobs[0].ID {
		t.Fatalf("took %v, want the first key's job", got)
	}
}
