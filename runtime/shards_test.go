package runtime_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
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
	for range 2 {
		startWorker(t, echoWorker(t, c, seen, "hot"))
	}
	waitFor(t, 60*time.Second, "every job to run", func() bool { return seen.n.Load() >= int64(len(ids)) })
	seen.check(t, ids)
	if info := jobInfo(t, c, ids[len(ids)-1]); info.Route != "hot" || info.Status != runtime.StatusCompleted {
		t.Fatalf("a job of a shard reads as route %q, %s", info.Route, info.Status)
	}

	after := scriptCalls(t, masters)
	var total int64
	share := make([]int64, len(masters))
	for i := range masters {
		share[i] = after[i] - before[i]
		total += share[i]
	}
	for i, n := range share {
		if f := float64(n) / float64(total); f < 0.9/3 || f > 1.1/3 {
			t.Errorf("master %d ran %d of %d scripts (%.3f), want a third within 10%%: %v", i, n, total, f, share)
		}
	}
	t.Logf("scripts per master: %v", share)
}

// Ids of a shard's jobs resolve for Job, Cancel and Await like any other.
func TestShards_IdsOfAShardResolveForJobCancelAndAwait(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		if err := runtime.QueueOf(c).SetShards(ctx, "sh", 4); err != nil {
			t.Fatal(err)
		}
		task := testtasks.Echo.With(c)
		var ids []string
		for i := range 8 {
			id, err := task.Enqueue(ctx, Msg{Text: fmt.Sprint(i)}, runtime.Route("sh"))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if r, _ := queue.RouteOf(ids[1]); r == "sh" || queue.ShardBase(r) != "sh" {
			t.Fatalf("the second job went to %q, not to another shard of sh", r)
		}
		in := runtime.NewInspector(c)
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
