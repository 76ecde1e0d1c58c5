package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

func fetchBatch(t *testing.T, q *queue.Queue, route, task string, per, n int) []*queue.Dispatch {
	t.Helper()
	now := q.Now()
	ds, err := q.Jobs.FetchBatch(context.Background(), route, queue.Priorities, task, per, n, now.Add(time.Minute), now)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func idsOf(ds []*queue.Dispatch) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}

func TestFetchBatch_TakesOneKeysJobsTogetherInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		a := enqueueKeyed(t, q, "bf", queue.Normal, "t", "A", 5)
		b := enqueueKeyed(t, q, "bf", queue.Normal, "t", "B", 5)
		ds := fetchBatch(t, q, "bf", "t", 3, 3)
		if got := idsOf(ds); !slices.Equal(got, a[:3]) {
			t.Fatalf("took %v, want A's first three %v", got, a[:3])
		}
		for _, d := range ds {
			if d.Flow != "t|A" || d.Name != "t" {
				t.Fatalf("dispatch %s has flow %q name %q, want t|A and t", d.ID, d.Flow, d.Name)
			}
		}
		// A's piece filled the batch: B's turn is next, then A's rest.
		if got := idsOf(fetchBatch(t, q, "bf", "t", 3, 3)); !slices.Equal(got, b[:3]) {
			t.Fatalf("took %v, want B's first three %v", got, b[:3])
		}
		got := idsOf(fetchBatch(t, q, "bf", "t", 3, 100))
		if want := append(slices.Clone(a[3:]), b[3:]...); !slices.Equal(got, want) {
			t.Fatalf("took %v, want A's rest then B's rest %v", got, want)
		}
	})
}

func TestFetchBatch_AFlowCutShortKeepsItsTurn(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		a := enqueueKeyed(t, q, "cut", queue.Normal, "t", "A", 10)
		enqueueKeyed(t, q, "cut", queue.Normal, "t", "B", 10)
		first := idsOf(fetchBatch(t, q, "cut", "t", 10, 4))
		second := idsOf(fetchBatch(t, q, "cut", "t", 10, 6))
		if !slices.Equal(append(first, second...), a) {
			t.Fatalf("two fetches cut at 4 took %v then %v, want all of A %v", first, second, a)
		}
	})
}

func TestFetchBatch_LeavesOtherTasksAndHonoursMaxRunningAndPause(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		other := enqueueKeyed(t, q, "mix", queue.Normal, "other", "A", 2)
		if err := q.Flows.SetTaskLimits(ctx, "mix", "t", queue.Limits{MaxRunning: 2}); err != nil {
			t.Fatal(err)
		}
		mine := enqueueKeyed(t, q, "mix", queue.Normal, "t", "A", 5)
		ds := fetchBatch(t, q, "mix", "t", 10, 10)
		if got := idsOf(ds); !slices.Equal(got, mine[:2]) {
			t.Fatalf("took %v, want the first two of t|A (max_running=2)", got)
		}
		if more := fetchBatch(t, q, "mix", "t", 10, 10); len(more) != 0 {
			t.Fatalf("took %v while t|A runs its cap", idsOf(more))
		}
		if _, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := q.Ops.Pause(ctx, "mix"); err != nil {
			t.Fatal(err)
		}
		if more := fetchBatch(t, q, "mix", "t", 10, 10); len(more) != 0 {
			t.Fatalf("took %v from a paused route", idsOf(more))
		}
		if err := q.Ops.Resume(ctx, "mix"); err != nil {
			t.Fatal(err)
		}
		if got := idsOf(fetchBatch(t, q, "mix", "t", 10, 10)); !slices.Equal(got, mine[2:3]) {
			t.Fatalf("after one ended took %v, want %v", got, mine[2:3])
		}
		rest, _ := fetchIDs(t, q, "mix", 10)
		if !slices.Equal(rest, other) {
			t.Fatalf("the other task's jobs came as %v, want %v", rest, other)
		}
	})
}

func TestFetchBatch_RunTwiceWithOneTokenTakesNothingMore(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		a := enqueueKeyed(t, q, "twice", queue.Normal, "t", "A", 6)
		now := q.Now()
		ds, err := q.Jobs.FetchBatch(context.Background(), "twice", queue.Priorities, "t", 3, 3, now.Add(time.Minute), now)
		if err != nil || !slices.Equal(idsOf(ds), a[:3]) {
			t.Fatalf("first fetch: %v, %v", idsOf(ds), err)
		}
		again, err := q.Jobs.ResendBatchFetch(context.Background(), "twice", queue.Priorities, "t", 3, 3, ds[0].Token, now)
		if err != nil {
			t.Fatal(err)
		}
		if got := idsOf(again); !slices.Equal(got, a[:3]) {
			t.Fatalf("a resent call answered %v, want the first call's %v", got, a[:3])
		}
		for _, d := range again {
			if d.Flow != "t|A" {
				t.Fatalf("a resent call's job %s has flow %q", d.ID, d.Flow)
			}
		}
	})
}

// A batch fetch treats a job whose expiry passed as a single fetch does: it
// is set aside and ended expired, never handed to the batch handler; its
// key's other jobs are taken, and one that starts leaves the expiry set.
func TestFetchBatch_AJobFoundExpiredIsEndedNotLeased(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := q.Now()
		late := expiring(t, "r", now.Add(time.Second))
		fresh := expiring(t, "r", now.Add(time.Hour))
		for _, j := range []*queue.NewJob{&late, &fresh} {
			j.Keyed, j.Key = true, "k"
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{late, fresh}, now); err != nil {
			t.Fatal(err)
		}
		later := now.Add(2 * time.Second)
		ds, err := q.Jobs.FetchBatch(ctx, "r", queue.Priorities, "x", 10, 10, later.Add(time.Minute), later)
		if err != nil {
			t.Fatal(err)
		}
		if got := idsOf(ds); !slices.Equal(got, []string{fresh.ID}) {
			t.Fatalf("batch fetch took %v, want only %s", got, fresh.ID)
		}
		requireExpired(t, q, late.ID)
		if n, _ := q.Client().ZCard(ctx, q.Keys("r").Expiry()).Result(); n != 0 {
			t.Fatalf("expiry set holds %d entries, want none (the fresh job started)", n)
		}
	})
}
