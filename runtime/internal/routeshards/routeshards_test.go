package routeshards_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// watched is a Watcher of routes on the shared test server, and what it
// told: the shards it subscribed to and those it said were added.
type watched struct {
	*routeshards.Watcher
	q *queue.Queue

	mu               sync.Mutex
	subscribed, adds []string
}

func newWatched(t *testing.T, routes ...string) *watched {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	l := results.NewListener(rdb)
	t.Cleanup(func() { _ = l.Close() })
	w := &watched{q: q}
	w.Watcher = routeshards.New(routeshards.Config{
		Queue: q, Listener: l, Routes: routes, Logger: slog.Default(),
		Subscribe: func(ctx context.Context, shard string) ([]*results.Subscription, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.subscribed = append(w.subscribed, shard)
			return nil, nil
		},
		Added: func(_ context.Context, shards []string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.adds = append(w.adds, shards...)
		},
	})
	return w
}

// An unsharded route is its own only shard; once its count is set, a
// Refresh lists the new shards, listens on them and tells they were added.
func TestRefresh_FollowsACountChange(t *testing.T) {
	ctx := t.Context()
	w := newWatched(t, "r", "other")
	if err := w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.All(); !slices.Equal(got, []string{"r", "other"}) {
		t.Fatalf("All before sharding = %v", got)
	}
	if len(w.subscribed)+len(w.adds) != 0 {
		t.Fatalf("subscribed %v, added %v before sharding; want none (the worker listens on its routes)", w.subscribed, w.adds)
	}
	if err := w.q.SetShards(ctx, "r", 3); err != nil {
		t.Fatal(err)
	}
	if err := w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	want := append(queue.ShardNames("r", 3), "other")
	if got := w.All(); !slices.Equal(got, want) {
		t.Fatalf("All after sharding = %v, want %v", got, want)
	}
	newShards := queue.ShardNames("r", 3)[1:]
	if !slices.Equal(w.subscribed, newShards) || !slices.Equal(w.adds, newShards) {
		t.Fatalf("subscribed %v, added %v; want %v each", w.subscribed, w.adds, newShards)
	}
}

// Now starts each route's shards one further on at each call, the other
// routes following in preference order.
func TestNow_RotatesTheShards(t *testing.T) {
	ctx := t.Context()
	w := newWatched(t, "r", "other")
	if err := w.q.SetShards(ctx, "r", 2); err != nil {
		t.Fatal(err)
	}
	if err := w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	s := queue.ShardNames("r", 2)
	a, b := w.Now(), w.Now()
	if slices.Equal(a, b) {
		t.Fatalf("two calls of Now gave %v both", a)
	}
	for _, got := range [][]string{a, b} {
		if got[2] != "other" || !slices.Contains(got[:2], s[0]) || !slices.Contains(got[:2], s[1]) {
			t.Fatalf("Now = %v, want both of %v then other", got, s)
		}
	}
}
