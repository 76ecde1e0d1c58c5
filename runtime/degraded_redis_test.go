package runtime_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A worker on a Redis that evicts keys under memory pressure says so at
// start, naming the policy: an evicted key is a lost job. On a Redis with
// noeviction (redis-server's default) it says nothing of it.
func TestWorker_EvictingRedisIsWarnedAboutAtStart(t *testing.T) {
	t.Parallel()
	evicting := redistest.Start(t)
	if err := evicting.Client(t).ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url  string
		warn bool
	}{{evicting.URL(), true}, {redistest.Shared(t).URL(), false}} {
		var logs syncBuffer
		w := runtime.NewWorker(connect(t, c.url), fastOpts(runtime.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
		startWorker(t, w)
		waitFor(t, 10*time.Second, "the worker to start", func() bool { return strings.Contains(logs.String(), "worker started") })
		warned := strings.Contains(logs.String(), "evicts keys under memory pressure")
		if warned != c.warn || (c.warn && !strings.Contains(logs.String(), "maxmemory_policy=allkeys-lru")) {
			t.Fatalf("%s: warned %v, want %v, naming the policy:\n%s", c.url, warned, c.warn, logs.String())
		}
	}
}

// A route that cannot be fetched — here its ready list is garbage, as a
// route whose Redis node is down would fail too — does not stop the
// worker's other routes: their jobs run, and the outage is logged once.
func TestWorker_ARouteThatCannotBeFetchedDoesNotStopTheOthers(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		broken := runtime.QueueOf(c).Keys("broken").List(runtime.PriorityHigh)
		if err := c.Redis().Set(ctx, broken, "not a list", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var logs syncBuffer
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"broken", "default"}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
		testtasks.Register(w)
		startWorker(t, w)
		for n := range 3 {
			id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: "served", N: n})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := testtasks.Echo.With(c).Await(ctx, id); err != nil {
				t.Fatalf("job %d of the default route: %v", n, err)
			}
		}
		if n := strings.Count(logs.String(), "cannot fetch from route"); n != 1 || !strings.Contains(logs.String(), "route=broken") {
			t.Fatalf("%d outage lines; want one naming route broken:\n%s", n, logs.String())
		}
	})
}

// At maxmemory with noeviction, an enqueue fails with Redis's OOM error and
// writes nothing; the jobs already stored all run, on a worker that keeps
// running through it; and once memory frees, enqueues succeed and run again.
func TestWorker_RedisAtMaxmemoryRefusesEnqueuesAndLosesNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := ctxT(t)
	used, err := admin.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	base := infoInt(t, used, "used_memory")
	if err := admin.ConfigSet(ctx, "maxmemory", strconv.FormatInt(base+4<<20, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	c := connect(t, srv.URL())
	task := testtasks.Echo.With(c)
	big := strings.Repeat("x", 8<<10)
	var stored []string
	var refusal error
	for len(stored) < 10000 {
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: big})
		if err != nil {
			refusal = err
			break
		}
		stored = append(stored, id)
	}
	if refusal == nil || !strings.Contains(refusal.Error(), "OOM") || !strings.Contains(refusal.Error(), "maxmemory") {
		t.Fatalf("after %d enqueues: error %v; want Redis's OOM refusal naming maxmemory", len(stored), refusal)
	}
	if d, err := runtime.QueueOf(c).Depths(ctx, []string{"default"}); err != nil || d[0].Normal != int64(len(stored)) {
		t.Fatalf("pending after the refusal = %+v, %v; want exactly the %d acknowledged jobs", d, err, len(stored))
	}

	var logs syncBuffer
	// Results that expire soon: a finished job is its result record (args
	// included), so memory frees when the records expire.
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 8, ResultTTL: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	runtime.Handle(w, testtasks.Echo, func(_ context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		return testtasks.Reply{Text: "ok"}, nil
	})
	startWorker(t, w)
	waitFor(t, 30*time.Second, "every stored job to complete", func() bool {
		for _, id := range stored {
			if info, err := c.Job(ctx, id); err != nil || info.Status != runtime.StatusCompleted {
				return false
			}
		}
		return true
	})
	waitFor(t, 20*time.Second, "an enqueue to succeed once the results expired and freed memory", func() bool {
		_, err := task.Enqueue(ctx, testtasks.Msg{Text: big})
		return err == nil
	})
	if got, err := task.Call(ctx, testtasks.Msg{Text: "after"}); err != nil || got.Text != "ok" {
		t.Fatalf("Call after memory freed = %+v, %v", got, err)
	}
	t.Logf("%d jobs of 8 KiB stored before the refusal (maxmemory %d MiB over the empty server); refusal: %v", len(stored), 4, refusal)
}

func infoInt(t *testing.T, info, field string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s = %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s", field)
	return 0
}
