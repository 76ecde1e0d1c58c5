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
// scripts' own commands included, each by name, and their sum. Left out are
// the INFO calls that read them and the PEXPIRE a stats series gets when a
// field is born, the first count of its kind in a minute, which only a run
// across a minute's end pays, and the SADD that notes a route in the
// routes set: once per route and process, and again now and then in the
// background, so an earlier enqueue's may land inside f. The server must
// be private to the test (redistest.Start).
func commandsOf(t *testing.T, rdb *redis.Client, f func()) (int64, map[string]int64) {
	t.Helper()
	before := commandStats(t, rdb)
	f()
	delta := commandStats(t, rdb)
	var sum int64
	for name, calls := range delta {
		delta[name] = calls - before[name]
		if name != "info" && name != "pexpire" && name != "sadd" {
			sum += delta[name]
		}
	}
	return sum, delta
}

// jobLife enqueues one plain job (no key, no delay) on route, fetches it
// and ends it: acked, or failed (to retry) when fail.
func jobLife(t *testing.T, q *queue.Queue, route string, fail bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := q.Jobs.Enqueue(ctx, route, queue.Normal, []queue.NewJob{job(t, route)}, q.Now()); err != nil {
		t.Fatal(err)
	}
	_, ds := fetchIDs(t, q, route, 8)
	if len(ds) != 1 {
		t.Fatalf("fetch took %d jobs, want the 1 enqueued", len(ds))
	}
	if fail {
		now := q.Now()
		if out, err := q.Jobs.Fail(ctx, ds[0], queue.Failure{Message: "boom", RetryAt: now.Add(time.Hour), TTL: time.Minute}, now); out != queue.EndRetrying || err != nil {
			t.Fatalf("fail = %v, %v", out, err)
		}
		return
	}
	if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); err != nil || !ok {
		t.Fatalf("ack = %v, %v", ok, err)
	}
}

// A route where some task has limits, but no keyed job waits or runs and
// the route has no limit of its own, costs a job of no key what it costs on
// a route with no flow keys at all, but the few commands that find so: none
// of the flow's repair and reads, whether the job completes or fails.
func TestHotPath_TaskLimitsCostAJobOfNoKeyNoFlowWork(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Flows.SetTaskLimits(context.Background(), "limited", "other", queue.Limits{MaxRunning: 1, Rate: 5, Per: time.Second, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	for _, fail := range []bool{false, true} {
		jobLife(t, q, "warm", fail) // the scripts loaded
		bare, _ := commandsOf(t, rdb, func() { jobLife(t, q, "bare", fail) })
		limited, _ := commandsOf(t, rdb, func() { jobLife(t, q, "limited", fail) })
		// The flow's repair and reads cost 17 or more; the margin of 8
		// leaves room for what a clock read under load adds (a series
		// field born at a minute's turn).
		if limited > bare+8 {
			t.Fatalf("a job of no key (failed: %v) costs %d commands on a route with task limits, %d on one without: want at most 8 more", fail, limited, bare)
		}
	}
	// A failure checks the types of its own few keys more than an ack
	// does (the job's, the scheduled and dead sets, the cancels), none of
	// the flow keys.
	types := func(fail bool) int64 {
		before := commandStat(t, rdb, "type")
		jobLife(t, q, "limited", fail)
		return commandStat(t, rdb, "type") - before
	}
	if acked, failed := types(false), types(true); failed > acked+4 {
		t.Fatalf("a job of no key that failed made %d TYPE calls, one acked %d: want at most 4 more", failed, acked)
	}
}

// A plain job's life (push, fetch, ack) checks the types of the keys it
// reads and writes by the commands it makes anyway where it can (a first
// read, or the first write): a TYPE call only for the three keys whose first
// use is a later write (fetch's active set, leases and payloads hashes;
// ack's active set, payloads and groups hashes).
func TestHotPath_APlainJobChecksKeyTypesByItsOwnReads(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	jobLife(t, q, "warm", false)
	before := commandStat(t, rdb, "type")
	jobLife(t, q, "r", false)
	if n := commandStat(t, rdb, "type") - before; n > 6 {
		t.Fatalf("a plain job's life made %d TYPE calls, want at most 6", n)
	}
}

// A plain job's whole life, one call each for its enqueue, fetch and ack on
// a route with no flow keys, stays within the commands docs/PERFORMANCE.md
// accounts for ("What a job pays"): the three calls and their scripts'
// commands. The fetch finds in one EXISTS that the route is neither paused
// nor under flow control.
func TestHotPath_APlainJobsLifeStaysWithinItsCommands(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	jobLife(t, q, "warm", false)
	jobLife(t, q, "r", false) // the route known
	if n, each := commandsOf(t, rdb, func() { jobLife(t, q, "r", false) }); n > 42 {
		t.Fatalf("a plain job's life cost %d commands, want at most 42: %v", n, each)
	}
}

// commandStats returns the calls of each command the server has run.
func commandStats(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

// An enqueue of jobs of no key, and of keyed jobs scheduled for later,
// checks the types of its own keys only: none of the route's twelve flow
// keys (bn_flow_repair), which only a keyed job made ready writes.
func TestHotPath_AnEnqueueOfNoKeyedJobReadyChecksNoFlowKey(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	later := keyedJob(t, "r", "t", "k")
	later.RunAt = q.Now().Add(time.Hour)
	jobs := []queue.NewJob{job(t, "r"), job(t, "r"), later}
	types := func() int64 { return commandStat(t, rdb, "type") }
	enqueue := func(jobs []queue.NewJob) int64 {
		before := types()
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, q.Now()); err != nil {
			t.Fatal(err)
		}
		return types() - before
	}
	if n := enqueue(jobs); n > 3 {
		t.Fatalf("an enqueue of no keyed job ready made %d TYPE calls, want at most its own 3 keys'", n)
	}
	if n := enqueue([]queue.NewJob{keyedJob(t, "r", "t", "k")}); n <= 3 {
		t.Fatalf("an enqueue of a keyed job ready made %d TYPE calls: its flow keys went unchecked", n)
	}
}

// commandStat returns how many calls of command name the server has run.
func commandStat(t *testing.T, rdb *redis.Client, name string) int64 {
	t.Helper()
	return commandStats(t, rdb)[name]
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
