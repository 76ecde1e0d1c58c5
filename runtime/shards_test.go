package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// ranOnce counts the runs of each job a handler saw.
type ranOnce struct {
	mu   sync.Mutex
	runs map[string]int
	n    atomic.Int64
}

func newRanOnce() *ranOnce { return &ranOnce{runs: map[string]int{}} }

func (r *ranOnce) ran(id string) {
	r.mu.Lock()
	r.runs[id]++
	r.mu.Unlock()
	r.n.Add(1)
}

// check fails t unless every id ran exactly once and nothing else ran.
func (r *ranOnce) check(t *testing.T, ids []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if r.runs[id] != 1 {
			t.Errorf("job %s ran %d times", id, r.runs[id])
		}
	}
	if len(r.runs) != len(ids) {
		t.Errorf("%d distinct jobs ran, %d enqueued", len(r.runs), len(ids))
	}
}

// scriptCalls reads, from each of addrs, the calls of EVAL and EVALSHA
// (every transition of a job is a script) from INFO commandstats.
func scriptCalls(t *testing.T, addrs []string) []int64 {
	t.Helper()
	out := make([]int64, len(addrs))
	for i, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a})
		info, err := rdb.Info(context.Background(), "commandstats").Result()
		_ = rdb.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
				continue
			}
			calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			out[i] += n
		}
	}
	return out
}

// jobsPerMaster counts ids by the master (of masters, as CLUSTER SLOTS
// asked of addr names them) that serves the slot of each job's route.
func jobsPerMaster(t *testing.T, addr string, masters, ids []string) []int {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	//lint:ignore SA1019 CLUSTER SLOTS answers on every redis-server the tests start; its ranges are all this needs
	slots, err := rdb.ClusterSlots(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(masters))
	for _, id := range ids {
		r, _ := queue.RouteOf(id)
		slot := queue.Slot(r)
		for _, sr := range slots {
			if slot < int(sr.Start) || slot > int(sr.End) || len(sr.Nodes) == 0 {
				continue
			}
			for i, m := range masters {
				if sr.Nodes[0].Addr == m {
					out[i]++
				}
			}
		}
	}
	return out
}

func echoWorker(t *testing.T, c *runtime.Client, seen *ranOnce, routes ...string) *runtime.Worker {
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: routes, Concurrency: 16}))
	runtime.Handle(w, testtasks.Echo.With(c), func(ctx context.Context, m Msg) (Reply, error) {
		j, _ := runtime.CurrentJob(ctx)
		seen.ran(j.ID)
		return Reply{Text: m.Text}, nil
	})
	return w
}

// enqueueEcho enqueues n echo jobs to route in batches of 50, and returns
// their ids.
func enqueueEcho(t *testing.T, c *runtime.Client, route string, n int) []string {
	t.Helper()
	ctx := ctxT(t)
	var ids []string
	for len(ids) < n {
		msgs := make([]Msg, min(50, n-len(ids)))
		got, err := testtasks.Echo.With(c).EnqueueMany(ctx, msgs, runtime.Route(route))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	return ids
}

// A route of 12 shards on a three-master cluster: a producer's jobs spread
// over the shards, workers drain every shard, every job runs once, and each
// master runs about a third of the route's scripts.
func TestShards_TwelveShardsShareTheWorkEvenlyOverThreeMasters(t *testing.T) {
	cl := redistest.StartCluster(t)
	c := connect(t, cl.URL())
	ctx := ctxT(t)
	if err := runtime.QueueOf(c).SetShards(ctx, "hot", 12); err != nil {
		t.Fatal(err)
	}
	masters := cl.Addrs()[:3]
	before := scriptCalls(t, masters)

	seen := newRanOnce()
	ids := enqueueEcho(t, c, "hot", 3000)
	shards := map[string]int{}
	for _, id := range ids {
		r, _ := queue.RouteOf(id)
		shards[r]++
	}
	if len(shards) != 12 {
		t.Fatalf("jobs went to %d shards, want 12: %v", len(shards), shards)
	}
	// A producer connected after the change spreads from its first jobs:
	// Connect read the count (on a cluster a first read is not waited for).
	late := connect(t, cl.URL(), runtime.WithNamespace(runtime.QueueOf(c).Namespace()))
	first, err := testtasks.Echo.With(late).EnqueueMany(ctx, make([]Msg, 2), runtime.Route("hot"))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := queue.RouteOf(first[0]); a == "hot" {
		if b, _ := queue.RouteOf(first[1]); b == "hot" {
			t.Fatalf("the first jobs of a new producer went to the route itself alone")
		}
	}
	ids = append(ids, first...)
	for range 2 {
		startWorker(t, echoWorker(t, c, seen, "hot"))
	}
	waitFor(t, 60*time.Second, "every job to run", func() bool { return seen.n.Load() >= int64(len(ids)) })
	seen.check(t, ids)
	// A handler is seen to run before its ack lands.
	last := ids[len(ids)-1]
	waitFor(t, 10*time.Second, "the last job's ack", func() bool { return jobStatus(t, c, last) == runtime.StatusCompleted })
	if info := jobInfo(t, c, last); info.Route != "hot" {
		t.Fatalf("a job of a shard reads as route %q", info.Route)
	}

	// Where the jobs live: each shard's keys hash to one slot, so the jobs
	// of the shards each master serves are its share of the work, exactly.
	jobs := jobsPerMaster(t, masters[0], masters, ids)
	for i, n := range jobs {
		if f := float64(n) / float64(len(ids)); f < 0.9/3 || f > 1.1/3 {
			t.Errorf("master %d holds %d of %d jobs (%.3f), want a third within 10%%: %v", i, n, len(ids), f, jobs)
		}
	}
	// What ran where: every job's scripts ran on its master, beside the
	// loops every process runs (keepers, promoters, schedules), which
	// blur the split a little under load.
	after := scriptCalls(t, masters)
	var total int64
	share := make([]int64, len(masters))
	for i := range masters {
		share[i] = after[i] - before[i]
		total += share[i]
	}
	for i, n := range share {
		if f := float64(n) / float64(total); f < 0.75/3 || f > 1.25/3 {
			t.Errorf("master %d ran %d of %d scripts (%.3f), want a third within 25%%: %v", i, n, total, f, share)
		}
	}
	t.Logf("jobs per master: %v; scripts per master: %v", jobs, share)
}

// Ids of a shard's jobs resolve for Job, Cancel and Await like any other.
func TestShards_IdsOfAShardResolveForJobCancelAndAwait(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		if err := runtime.QueueOf(c).SetShards(ctx, "sh", 4); err != nil {
			t.Fatal(err)
		}
		task := testtasks.Echo.With(c)
		msgs := make([]Msg, 8)
		for i := range msgs {
			msgs[i].Text = fmt.Sprint(i)
		}
		ids, err := task.EnqueueMany(ctx, msgs, runtime.Route("sh"))
		if err != nil {
			t.Fatal(err)
		}
		// A batch without keys is one call to one shard, all or nothing; the
		// next batch goes to the next shard.
		first, _ := queue.RouteOf(ids[0])
		for _, id := range ids {
			if r, _ := queue.RouteOf(id); r != first || queue.ShardBase(r) != "sh" {
				t.Fatalf("batch jobs went to %q and %q, want one shard of sh", first, r)
			}
		}
		more, err := task.EnqueueMany(ctx, msgs[:2], runtime.Route("sh"))
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := queue.RouteOf(more[0]); r == first || queue.ShardBase(r) != "sh" {
			t.Fatalf("the next batch went to %q, want another shard of sh than %q", r, first)
		}
		in := runtime.NewInspector(c)
		for _, id := range more {
			if err := in.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range ids[:2] {
			if info := jobInfo(t, c, id); info.Route != "sh" || info.Status != runtime.StatusPending {
				t.Fatalf("Job(%s) = route %q, %s", id, info.Route, info.Status)
			}
		}
		if st, err := in.Cancel(ctx, ids[1]); err != nil || st != runtime.StatusCanceled {
			t.Fatalf("Cancel of a shard's job = %s, %v", st, err)
		}
		seen := newRanOnce()
		startWorker(t, echoWorker(t, c, seen, "sh"))
		if got, err := task.Await(ctx, ids[2]); err != nil || got.Text != "2" {
			t.Fatalf("Await of a shard's job = %+v, %v", got, err)
		}
		waitFor(t, 10*time.Second, "the jobs not canceled to run", func() bool { return seen.n.Load() >= 7 })
		seen.check(t, append(append([]string{}, ids[:1]...), ids[2:]...))
	})
}

// PUT /api/v1/routes/{route}/shards stores the count every producer reads;
// GET reads it back; a count out of range is a 400 naming shards.
func TestShards_SetAndReadOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		api := serveAPI(t, runtime.NewInspector(c), runtime.APIOptions{})
		if got := api.want(http.StatusOK, "GET", "/api/v1/routes/web/shards", ""); got["route"] != "web" || got["shards"] != float64(1) {
			t.Fatalf("GET of a route never sharded = %v", got)
		}
		if got := api.want(http.StatusOK, "PUT", "/api/v1/routes/web/shards", `{"shards": 6}`); got["route"] != "web" || got["shards"] != float64(6) {
			t.Fatalf("PUT = %v", got)
		}
		if got := api.want(http.StatusOK, "GET", "/api/v1/routes/web/shards", ""); got["shards"] != float64(6) {
			t.Fatalf("GET after PUT = %v", got)
		}
		if n, err := runtime.QueueOf(c).Shards(ctxT(t), "web"); err != nil || n != 6 {
			t.Fatalf("stored count = %d, %v", n, err)
		}
		for _, b := range []string{`{"shards": 0}`, `{"shards": 257}`} {
			if got := api.want(http.StatusBadRequest, "PUT", "/api/v1/routes/web/shards", b); got["field"] != "shards" || !strings.Contains(fmt.Sprint(got["error"]), "1-256") {
				t.Fatalf("PUT %s = %v", b, got)
			}
		}
		if got := api.want(http.StatusBadRequest, "PUT", "/api/v1/routes/we~b/shards", `{"shards": 2}`); got["field"] != "route" {
			t.Fatalf("PUT on a shard's name = %v", got)
		}
	})
}

// fetchNone fails t when a fetch from any of shards takes a job.
func fetchNone(t *testing.T, c *runtime.Client, shards []string) {
	t.Helper()
	q := runtime.QueueOf(c)
	now := q.Now()
	for _, s := range shards {
		ds, err := q.Jobs.Fetch(ctxT(t), s, queue.Priorities, 10, now.Add(time.Minute), now)
		if err != nil || len(ds) != 0 {
			t.Fatalf("a fetch from shard %s of a paused route took %d job(s), %v", s, len(ds), err)
		}
	}
}

// Pausing a sharded route pauses every shard, those made by a later
// change of the count too; the route lists once, its shards' jobs summed;
// resuming lets every job run once.
func TestShards_PauseStopsEveryShardAndTheRouteListsOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		in := runtime.NewInspector(c)
		if err := in.SetShards(ctx, "ps", 4); err != nil {
			t.Fatal(err)
		}
		ids := enqueueEcho(t, c, "ps", 8)
		if err := in.Pause(ctx, "ps"); err != nil {
			t.Fatal(err)
		}
		fetchNone(t, c, queue.ShardNames("ps", 4))
		if err := in.SetShards(ctx, "ps", 8); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, enqueueEcho(t, c, "ps", 8)...)
		fetchNone(t, c, queue.ShardNames("ps", 8))
		fetchNone(t, c, queue.ShardNames("ps", 4))

		routes, err := in.Routes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var listed []bananastype.Route
		for _, r := range routes {
			if queue.ShardBase(r.Route) == "ps" {
				listed = append(listed, r)
			}
		}
		if len(listed) != 1 || listed[0].Route != "ps" || listed[0].Normal != 16 || !listed[0].Paused {
			t.Fatalf("routes listing of ps = %+v; want one paused entry of 16 pending jobs", listed)
		}
		page, err := in.Jobs(ctx, admin.JobQuery{Route: "ps", State: runtime.StatusPending, Limit: 100})
		if err != nil || len(page.Jobs) != 16 || page.Jobs[0].Route != "ps" {
			t.Fatalf("jobs of route ps: %d listed, %v", len(page.Jobs), err)
		}

		seen := newRanOnce()
		startWorker(t, echoWorker(t, c, seen, "ps"))
		if err := in.Resume(ctx, "ps"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "every job of the resumed route to run", func() bool { return seen.n.Load() >= int64(len(ids)) })
		seen.check(t, ids)
	})
}

// Changing the count while jobs wait and producers enqueue loses no job and
// runs none twice. A worker running across the change (of another client,
// which learns the count from Redis) and one started after it, which knows
// only the new count, drain the shards of the earlier count as well.
func TestShards_ChangingTheCountLiveLosesNoJob(t *testing.T) {
	for _, change := range [][2]int{{12, 4}, {1, 6}} {
		t.Run(fmt.Sprintf("%d_to_%d", change[0], change[1]), func(t *testing.T) {
			t.Parallel()
			url := redistest.Shared(t).URL()
			producer := connect(t, url)
			worker := connect(t, url, runtime.WithNamespace(runtime.QueueOf(producer).Namespace()))
			ctx := ctxT(t)
			in := runtime.NewInspector(producer)
			if err := in.SetShards(ctx, "live", change[0]); err != nil {
				t.Fatal(err)
			}
			ids := enqueueEcho(t, producer, "live", 600)
			seen := newRanOnce()
			changed := make(chan struct{})
			before := runtime.NewWorker(worker, fastOpts(runtime.WorkerOptions{Routes: []string{"live"}, Concurrency: 4}))
			runtime.Handle(before, testtasks.Echo.With(worker), func(ctx context.Context, m Msg) (Reply, error) {
				<-changed // the jobs of the earlier count wait for the change
				j, _ := runtime.CurrentJob(ctx)
				seen.ran(j.ID)
				return Reply{Text: m.Text}, nil
			})
			startWorker(t, before)

			for i := range 600 {
				id, err := testtasks.Echo.With(producer).Enqueue(ctx, Msg{Text: fmt.Sprint(i)}, runtime.Route("live"))
				if err != nil {
					t.Fatalf("enqueue: %v", err)
				}
				ids = append(ids, id)
				switch i {
				case 200:
					if err := in.SetShards(ctx, "live", change[1]); err != nil {
						t.Fatalf("SetShards: %v", err)
					}
					close(changed)
				case 300:
					startWorker(t, echoWorker(t, worker, seen, "live"))
				}
			}
			shards := map[string]bool{}
			for _, id := range ids {
				r, _ := queue.RouteOf(id)
				shards[r] = true
			}
			if len(shards) < max(change[0], change[1]) {
				t.Fatalf("jobs went to %d shards over the change %v", len(shards), change)
			}
			waitFor(t, 30*time.Second, "every job to run", func() bool { return seen.n.Load() >= int64(len(ids)) })
			seen.check(t, ids)
		})
	}
}

// A worker that starts after the count shrank knows only the new shards;
// it finds those of the earlier count in the routes set and drains them.
func TestShards_AWorkerStartedAfterAShrinkDrainsTheEarlierShards(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		in := runtime.NewInspector(c)
		if err := in.SetShards(ctx, "shrink", 12); err != nil {
			t.Fatal(err)
		}
		ids := enqueueEcho(t, c, "shrink", 240)
		for _, n := range []int{3, 1} {
			if err := in.SetShards(ctx, "shrink", n); err != nil {
				t.Fatal(err)
			}
			seen := newRanOnce()
			stop := startWorker(t, echoWorker(t, c, seen, "shrink"))
			waitFor(t, 20*time.Second, "the jobs of the earlier shards to run", func() bool { return seen.n.Load() >= int64(len(ids)) })
			stop()
			seen.check(t, ids)
			ids = enqueueEcho(t, c, "shrink", 24) // for the next count
			if err := in.SetShards(ctx, "shrink", 12); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, enqueueEcho(t, c, "shrink", 240)...)
		}
	})
}

// An idle worker of a sharded route is woken by a job on any shard, those
// of a count raised while it runs included: it listens on every shard's
// channel, and never waits for its safety poll (an hour here).
func TestShards_IdleWorkerWakesForEveryShardOnesAddedLiveToo(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		in := runtime.NewInspector(c)
		if err := in.SetShards(ctx, "wk", 5); err != nil {
			t.Fatal(err)
		}
		task := testtasks.Echo.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{SafetyPoll: time.Hour, Routes: []string{"wk"}}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
		startWorker(t, w)
		call := func(n int) {
			for i := range n {
				if got, err := task.Call(ctx, Msg{Text: fmt.Sprint(i)}, runtime.Route("wk")); err != nil || got.Text != fmt.Sprint(i) {
					t.Fatalf("call %d = %+v, %v", i, got, err)
				}
			}
		}
		call(10)
		if got, err := task.Call(ctx, Msg{Text: "later"}, runtime.Route("wk"), runtime.Delay(200*time.Millisecond)); err != nil || got.Text != "later" {
			t.Fatalf("delayed call = %+v, %v", got, err)
		}
		if err := in.SetShards(ctx, "wk", 9); err != nil {
			t.Fatal(err)
		}
		call(18)
	})
}

// A key meets itself on a sharded route: a unique job's duplicate and a
// chosen id's second enqueue go to the shard of the first and are refused.
func TestShards_UniqueKeysAndChosenIDsAreRefusedTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		if err := runtime.NewInspector(c).SetShards(ctx, "uq", 8); err != nil {
			t.Fatal(err)
		}
		task := testtasks.Echo.With(c)
		for i := range 8 {
			msg := Msg{Text: fmt.Sprint("u", i)}
			first, err := task.Enqueue(ctx, msg, runtime.Route("uq"), runtime.Unique(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			again, err := task.Enqueue(ctx, msg, runtime.Route("uq"), runtime.Unique(time.Hour))
			if !errors.Is(err, runtime.ErrDuplicate) || again != first {
				t.Fatalf("duplicate of unique job %s = %s, %v", first, again, err)
			}
			id := fmt.Sprint("order-", i)
			if _, err := task.Enqueue(ctx, msg, runtime.Route("uq"), runtime.WithID(id)); err != nil {
				t.Fatal(err)
			}
			if _, err := task.Enqueue(ctx, msg, runtime.Route("uq"), runtime.WithID(id)); !errors.Is(err, runtime.ErrDuplicate) {
				t.Fatalf("second enqueue of chosen id %s = %v", id, err)
			}
			if info := jobInfo(t, c, id); info.Route != "uq" || info.Status != runtime.StatusPending {
				t.Fatalf("Job(%s) = route %q, %s", id, info.Route, info.Status)
			}
		}
	})
}

// The queue-depth gauges have one series per route, its shards summed, and
// none per shard; a job's end is counted under its route too.
func TestShards_MetricsHaveOneSeriesPerRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		if err := runtime.NewInspector(c).SetShards(ctx, "mx", 6); err != nil {
			t.Fatal(err)
		}
		enqueueEcho(t, c, "mx", 12)
		scrapeUntil(t, c, 0, []want{
			{"bananas_queue_pending", []string{"route=mx", "priority=normal"}, 12},
			{"bananas_route_paused", []string{"route=mx"}, 0},
		})
		if s := scrapeMetrics(t, c); strings.Contains(s.body, "mx~") {
			t.Fatalf("a shard has series of its own:\n%s", s.body)
		}
	})
}

// Cancel-waiting and the dead-letter queue of a sharded route act on and
// list every shard.
func TestShards_CancelWaitingAndTheDLQSeeTheWholeRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		in := runtime.NewInspector(c)
		if err := in.SetShards(ctx, "cw", 4); err != nil {
			t.Fatal(err)
		}
		enqueueEcho(t, c, "cw", 8)
		if n, err := in.CancelWaiting(ctx, "cw", ""); err != nil || n != 8 {
			t.Fatalf("CancelWaiting = %d, %v; want the 8 jobs of 4 shards", n, err)
		}
		failing := testtasks.Note.With(c)
		for range 4 {
			if _, err := failing.Enqueue(ctx, Msg{}, runtime.Route("cw"), runtime.MaxRetries(0)); err != nil {
				t.Fatal(err)
			}
		}
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"cw"}}))
		runtime.Handle(w, failing, func(context.Context, Msg) (runtime.None, error) { return runtime.None{}, errors.New("no") })
		startWorker(t, w)
		waitFor(t, 20*time.Second, "4 dead jobs in the route's DLQ", func() bool {
			page, err := in.Jobs(ctx, admin.JobQuery{Route: "cw", State: runtime.StatusFailed, Limit: 10})
			return err == nil && len(page.Jobs) == 4
		})
		if n, err := in.PurgeDead(ctx, "cw", "", 0); err != nil || n != 4 {
			t.Fatalf("PurgeDead of the route = %d, %v", n, err)
		}
	})
}

// The command line sets and reads a route's shard count, and queues lists a
// sharded route once.
func TestCLI_RouteShardsSetsAndReadsTheCount(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	if out := a.ok("route", "shards", "email"); out != "route email: 1 shard(s)\n" {
		t.Fatalf("route shards email = %q", out)
	}
	if out := a.ok("route", "shards", "email", "6"); out != "route email: 6 shard(s)\n" {
		t.Fatalf("route shards email 6 = %q", out)
	}
	if out := a.ok("route", "shards", "email", "--json"); !strings.Contains(out, `"shards": 6`) || !strings.Contains(out, `"route": "email"`) {
		t.Fatalf("route shards email --json = %q", out)
	}
	code, out, errOut := a.run("route", "shards", "email", "300")
	if code == 0 || out != "" || !strings.Contains(errOut, "shards") || !strings.Contains(errOut, "1-256") {
		t.Fatalf("route shards email 300 = %d %q %q", code, out, errOut)
	}
	for range 12 {
		a.ok("enqueue", "send_email", `{"To":"a@b","Subject":"s"}`)
	}
	out = a.ok("queues")
	if n := strings.Count(out, "email"); n != 1 || strings.Contains(out, "~") {
		t.Fatalf("queues lists the sharded route %d times:\n%s", n, out)
	}
}

// A sharded route's jobs list page by page across its shards, oldest and
// newest first, each job once.
func TestShards_ListingARouteGoesPageByPageAcrossItsShards(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		in := runtime.NewInspector(c)
		if err := in.SetShards(ctx, "pg", 5); err != nil {
			t.Fatal(err)
		}
		ids := enqueueEcho(t, c, "pg", 23)
		for _, newest := range []bool{false, true} {
			seen := map[string]int{}
			q := admin.JobQuery{Route: "pg", State: runtime.StatusPending, Limit: 4, Newest: newest}
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatal("the listing does not end")
				}
				page, err := in.Jobs(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range page.Jobs {
					seen[j.ID]++
				}
				if page.Next == "" {
					break
				}
				q.Cursor = page.Next
			}
			for _, id := range ids {
				if seen[id] != 1 {
					t.Fatalf("newest %v: job %s listed %d times (%d distinct listed)", newest, id, seen[id], len(seen))
				}
			}
		}
	})
}

// The dashboard's overview lists a sharded route once, by its name, with
// its pause form; the stats count the jobs of every shard.
func TestShards_DashboardAndStatsSeeTheRouteWhole(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		in := runtime.NewInspector(c)
		if err := in.SetShards(ctx, "dash", 7); err != nil {
			t.Fatal(err)
		}
		ids := enqueueEcho(t, c, "dash", 14)
		resp, err := http.Get(serveAPI(t, in, runtime.APIOptions{}).url + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := strings.Count(string(body), "/routes/dash/pause"); n != 1 || strings.Contains(string(body), "dash~") {
			t.Fatalf("the overview has %d pause forms of route dash, or names a shard:\n%s", n, body)
		}
		seen := newRanOnce()
		startWorker(t, echoWorker(t, c, seen, "dash"))
		waitFor(t, 20*time.Second, "the jobs to run", func() bool { return seen.n.Load() >= int64(len(ids)) })
		waitFor(t, 10*time.Second, "the stats to count every shard's jobs", func() bool {
			st, err := in.Stats(ctx, time.Hour)
			if err != nil {
				return false
			}
			var enq, done int64
			for _, p := range st.Points {
				enq, done = enq+p.Enqueued, done+p.Processed
			}
			return enq == 14 && done == 14
		})
	})
}

// Once the shards of an earlier count are empty, an idle worker's fetches
// no longer look at them: each safety poll costs what one shard costs.
func TestShards_EmptiedEarlierShardsCostFetchesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		in := runtime.NewInspector(c)
		if err := in.SetShards(ctx, "emptied", 12); err != nil {
			t.Fatal(err)
		}
		ids := enqueueEcho(t, c, "emptied", 120)
		if err := in.SetShards(ctx, "emptied", 1); err != nil {
			t.Fatal(err)
		}
		seen := newRanOnce()
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"emptied"}, SafetyPoll: 20 * time.Millisecond}))
		runtime.Handle(w, testtasks.Echo.With(c), func(ctx context.Context, m Msg) (Reply, error) {
			j, _ := runtime.CurrentJob(ctx)
			seen.ran(j.ID)
			return Reply{}, nil
		})
		counter := &commandCounter{route: "emptied"} // the route's own commands, not the schedules' or workflows'
		runtime.QueueOf(c).Client().AddHook(counter)
		startWorker(t, w)
		waitFor(t, 20*time.Second, "the earlier shards' jobs to run", func() bool { return seen.n.Load() >= int64(len(ids)) })
		seen.check(t, ids)
		// 25 safety polls in half a second: a fetch of 12 shards each would
		// be 300 commands, of the one shard 25 and a few more.
		waitFor(t, 20*time.Second, "an idle worker to stop fetching the emptied shards", func() bool {
			start := counter.n.Load()
			time.Sleep(500 * time.Millisecond)
			return counter.n.Load()-start < 100
		})
	})
}
