package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
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
