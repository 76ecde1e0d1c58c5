package scheduler_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// runKeeper runs k until the returned stop is called (or the test ends).
func runKeeper(t *testing.T, k *scheduler.Keeper) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); k.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// within waits for cond, failing the test after d.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	waitUntil(t, ctx, what, cond)
}

// holders counts, for each route, the keepers that hold it.
func holders(ks []*scheduler.Keeper, routes []string) map[string]int {
	out := map[string]int{}
	for _, r := range routes {
		for _, k := range ks {
			if k.Holds(r) {
				out[r]++
			}
		}
	}
	return out
}

func TestKeeper_OneOfSeveralKeepsEachRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		routes := []string{"a", "b", "c"}
		var ks []*scheduler.Keeper
		for range 4 {
			k := &scheduler.Keeper{Queue: q, Routes: func() []string { return routes }, TTL: time.Minute}
			ks = append(ks, k)
			runKeeper(t, k)
		}
		within(t, 5*time.Second, "every route kept", func() bool {
			h := holders(ks, routes)
			return h["a"] > 0 && h["b"] > 0 && h["c"] > 0
		})
		for r, n := range holders(ks, routes) {
			if n != 1 {
				t.Errorf("route %s kept by %d keepers, want 1", r, n)
			}
		}
	})
}

// A keeper that stops gives its locks up and says so on the route's keeper
// channel; a standby told of it (as a worker's subscription does) takes the
// route over at once, not when the lock would have run out.
func TestKeeper_AStandbyTakesOverAtOnceWhenTheKeeperStops(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		first := &scheduler.Keeper{Queue: q, Routes: func() []string { return []string{"r"} }, TTL: time.Hour}
		stopFirst := runKeeper(t, first)
		within(t, 5*time.Second, "the first keeper to keep r", func() bool { return first.Holds("r") })
		standby := &scheduler.Keeper{Queue: q, Routes: func() []string { return []string{"r"} }, TTL: time.Hour}
		runKeeper(t, standby)
		sub := q.Client().Subscribe(ctx, q.Keys("r").KeeperChannel())
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		go func() {
			for range sub.Channel() {
				standby.Kick()
			}
		}()
		time.Sleep(50 * time.Millisecond) // the standby's first try, which finds r kept
		if standby.Holds("r") {
			t.Fatal("the standby holds r while the first keeper does")
		}
		stopFirst()
		within(t, 3*time.Second, "the standby to take r over", func() bool { return standby.Holds("r") })
	})
}

// A keeper that died never renews its lock: a standby takes the route over
// once the lock runs out (on a real server, whose TTLs run by themselves).
func TestKeeper_AStandbyTakesOverFromAKeeperThatDied(t *testing.T) {
	srv := redistest.Start(t)
	q, err := queue.New(srv.Client(t), redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := q.Client().Set(ctx, q.Keys("r").Keeper(), "a dead keeper's token", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	standby := &scheduler.Keeper{Queue: q, Routes: func() []string { return []string{"r"} }, TTL: 300 * time.Millisecond}
	runKeeper(t, standby)
	within(t, 3*time.Second, "the standby to take r over", func() bool { return standby.Holds("r") })
}

// A lock key that is not a string, or has no expiry, is garbage nobody
// would ever release: the keeper replaces it.
func TestKeeper_ALockKeyOfAnotherTypeOrWithoutExpiryIsTakenOver(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Client().HSet(ctx, q.Keys("a").Keeper(), "x", 1).Err(); err != nil {
			t.Fatal(err)
		}
		if err := q.Client().Set(ctx, q.Keys("b").Keeper(), "forever", 0).Err(); err != nil {
			t.Fatal(err)
		}
		k := &scheduler.Keeper{Queue: q, Routes: func() []string { return []string{"a", "b"} }, TTL: time.Minute}
		runKeeper(t, k)
		within(t, 5*time.Second, "a and b kept", func() bool { return k.Holds("a") && k.Holds("b") })
	})
}
