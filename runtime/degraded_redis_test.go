package runtime_test

import (
	"context"
	"log/slog"
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
