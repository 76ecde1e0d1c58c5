package queue_test

import (
	"context"
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
	if _, err := q.Enqueue(context.Background(), route, p, jobs, q.Now()); err != nil {
		t.Fatal(err)
	}
	return ids
}

func fetchIDs(t *testing.T, q *queue.Queue, route string, n int) ([]string, []*queue.Dispatch) {
	t.Helper()
	now := q.Now()
	ds, err := q.Fetch(context.Background(), route, queue.Priorities, n, now.Add(time.Minute), now)
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
		if err := q.SetTaskLimits(ctx, "one", "t", queue.Limits{MaxRunning: 1}); err != nil {
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
		if _, err := q.Ack(ctx, ds[0], []byte("ok"), time.Minute); err != nil {
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
		if err := q.SetTaskLimits(ctx, "seen", "t", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		enqueueKeyed(t, q, "seen", queue.Normal, "t", "A", 3)
		enqueueKeyed(t, q, "seen", queue.Normal, "t", "B", 1)
		fetchIDs(t, q, "seen", 10)
		fetchIDs(t, q, "seen", 10) // finds A at its cap: held
		st, err := q.Flows(ctx, "seen", 10)
		if err != nil {
			t.Fatal(err)
		}
		if st.Running != 2 || st.Waiting != 2 || st.Held != 1 || st.Throttled != 1 {
			t.Fatalf("state %+v, want 2 running, 2 waiting, A held once", st)
		}
		if len(st.Busiest) != 2 || st.Busiest[0].Key != "A" || st.Busiest[0].Waiting != 2 || st.Busiest[0].HeldUntil.IsZero() {
			t.Fatalf("busiest %+v, want A first with 2 waiting and held", st.Busiest)
		}
		if l := st.Tasks["t"]; l.MaxRunning != 1 {
			t.Fatalf("task limits %+v", st.Tasks)
		}
	})
}
