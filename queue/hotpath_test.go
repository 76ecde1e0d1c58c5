package queue_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// commandsOf returns how many commands the server processed while f ran,
// scripts' own commands included, less the INFO that reads the count. The
// server must be private to the test (redistest.Start).
func commandsOf(t *testing.T, rdb *redis.Client, f func()) int64 {
	t.Helper()
	read := func() int64 {
		info, err := rdb.Info(context.Background(), "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatal("INFO stats has no total_commands_processed")
		return 0
	}
	before := read()
	f()
	return read() - before - 1
}

// jobLife enqueues one plain job (no key, no delay) on route, fetches it
// and acks it.
func jobLife(t *testing.T, q *queue.Queue, route string) {
	t.Helper()
	ctx := context.Background()
	if _, err := q.Jobs.Enqueue(ctx, route, queue.Normal, []queue.NewJob{job(t, route)}, q.Now()); err != nil {
		t.Fatal(err)
	}
	_, ds := fetchIDs(t, q, route, 8)
	if len(ds) != 1 {
		t.Fatalf("fetch took %d jobs, want the 1 enqueued", len(ds))
	}
	if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); err != nil || !ok {
		t.Fatalf("ack = %v, %v", ok, err)
	}
}

// A route where some task has limits, but no keyed job waits or runs and
// the route has no limit of its own, costs a job of no key what it costs on
// a route with no flow keys at all, but the few commands that find so: none
// of the flow's repair and reads.
func TestHotPath_TaskLimitsCostAJobOfNoKeyNoFlowWork(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Flows.SetTaskLimits(context.Background(), "limited", "other", queue.Limits{MaxRunning: 1, Rate: 5, Per: time.Second, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	jobLife(t, q, "warm") // the scripts loaded
	bare := commandsOf(t, rdb, func() { jobLife(t, q, "bare") })
	limited := commandsOf(t, rdb, func() { jobLife(t, q, "limited") })
	if limited > bare+4 {
		t.Fatalf("a job of no key costs %d commands on a route with task limits, %d on one without: want at most 4 more", limited, bare)
	}
}

// A route's own limit holds back its jobs of no key when no keyed job
// waits at all (no ring, nothing held: only the limits hash says so).
func TestFlow_RouteCapAloneBoundsJobsOfNoKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Flows.SetTaskLimits(ctx, "solo", "other", queue.Limits{MaxRunning: 5}); err != nil {
			t.Fatal(err)
		}
		if err := q.Flows.SetRouteLimits(ctx, "solo", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := q.Jobs.Enqueue(ctx, "solo", queue.Normal, []queue.NewJob{job(t, "solo")}, q.Now()); err != nil {
				t.Fatal(err)
			}
		}
		got, ds := fetchIDs(t, q, "solo", 10)
		if len(got) != 1 {
			t.Fatalf("took %d, want the route's cap of 1", len(got))
		}
		if more, _ := fetchIDs(t, q, "solo", 10); len(more) != 0 {
			t.Fatalf("took %d more while the cap's one slot is held", len(more))
		}
		if _, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, _ = fetchIDs(t, q, "solo", 10); len(got) != 1 {
			t.Fatalf("after one ended took %d, want the other", len(got))
		}
	})
}
