package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

func TestSlot_AsRedisClusterComputesIt(t *testing.T) {
	// Slots as CLUSTER KEYSLOT answers them.
	for tag, want := range map[string]int{"foo": 12182, "bar": 5061, "hello": 866, "123456789": 0x31C3} {
		if got := queue.Slot(tag); got != want {
			t.Errorf("Slot(%q) = %d, want %d", tag, got, want)
		}
	}
}

// masterOf is the master owning slot in a cluster of three equal masters
// as redis-cli --cluster create assigns them.
func masterOf(slot int) int {
	switch {
	case slot <= 5460:
		return 0
	case slot <= 10922:
		return 1
	}
	return 2
}

func TestShardNames_FallEvenlyOverThreeMasters(t *testing.T) {
	for _, route := range []string{"hot", "orders", "a", "email-send", "X_9"} {
		for _, n := range []int{3, 6, 12, 24} {
			var per [3]int
			for _, name := range queue.ShardNames(route, n) {
				per[masterOf(queue.Slot(name))]++
			}
			for m, c := range per {
				if share := float64(c) / float64(n); share < 0.9/3 || share > 1.1/3 {
					t.Errorf("route %s, %d shards: master %d holds %d (%v)", route, n, m, c, per)
				}
			}
		}
	}
}

func TestShardNames_ShardZeroIsTheRouteAndNamesAreDistinctShardRoutes(t *testing.T) {
	for _, n := range []int{1, 2, 7, 256} {
		names := queue.ShardNames("hot", n)
		if len(names) != n || names[0] != "hot" {
			t.Fatalf("ShardNames(hot, %d) = %v", n, names)
		}
		seen := map[string]bool{}
		for _, s := range names {
			if seen[s] || !queue.ValidShardRoute(s) || queue.ShardBase(s) != "hot" {
				t.Fatalf("ShardNames(hot, %d): %q is a duplicate or not a shard of hot", n, s)
			}
			seen[s] = true
		}
		if again := queue.ShardNames("hot", n); strings.Join(again, ",") != strings.Join(names, ",") {
			t.Fatalf("ShardNames is not deterministic: %v then %v", names, again)
		}
	}
}

func TestValidRoute_RefusesShardNamesThatValidShardRouteAccepts(t *testing.T) {
	for _, s := range []string{"hot~1", "hot~42"} {
		if queue.ValidRoute(s) || !queue.ValidShardRoute(s) {
			t.Errorf("%q: ValidRoute %v, ValidShardRoute %v", s, queue.ValidRoute(s), queue.ValidShardRoute(s))
		}
	}
	for _, s := range []string{"hot~", "hot~0", "hot~01", "hot~x", "~1", "hot~1~2", "h{t~1"} {
		if queue.ValidShardRoute(s) {
			t.Errorf("ValidShardRoute(%q) = true", s)
		}
	}
}

func TestNewID_OfAShardIsLocatedInTheShard(t *testing.T) {
	id := queue.NewID("hot~17", time.Now())
	if r, ok := queue.RouteOf(id); !ok || r != "hot~17" {
		t.Fatalf("RouteOf(%s) = %q, %v", id, r, ok)
	}
	if err := queue.CheckChosenID(id, "hot"); err != nil {
		t.Fatalf("an id ending in a shard of the route is refused: %v", err)
	}
	if err := queue.CheckChosenID(id, "cold"); err == nil {
		t.Fatal("an id ending in a shard of another route is accepted")
	}
}

func TestJumpHash_GrowingTheCountMovesFewKeys(t *testing.T) {
	const keys = 10000
	moved := 0
	for k := range keys {
		a, b := queue.JumpHash(uint64(k)*0x9E3779B97F4A7C15, 12), queue.JumpHash(uint64(k)*0x9E3779B97F4A7C15, 13)
		if a != b {
			if b != 12 {
				t.Fatalf("key %d moved from %d to %d, not to the new bucket", k, a, b)
			}
			moved++
		}
	}
	if moved > keys/13*12/10 { // about 1/13 expected
		t.Fatalf("%d of %d keys moved from 12 to 13 buckets", moved, keys)
	}
}

func TestCheckShards_NamesTheFieldAndRange(t *testing.T) {
	for _, n := range []int{0, -1, 257} {
		err := queue.CheckShards(n)
		if err == nil || !strings.Contains(err.Error(), "shards") || !strings.Contains(err.Error(), "1-256") {
			t.Errorf("CheckShards(%d) = %v", n, err)
		}
	}
}

func TestSetShards_StoredReadBackAndSpreadOverShards(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if n, err := q.Shards(ctx, "hot"); err != nil || n != 1 {
			t.Fatalf("a route never sharded: %d, %v", n, err)
		}
		if err := q.SetShards(ctx, "hot", 4); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Shards(ctx, "hot"); err != nil || n != 4 {
			t.Fatalf("Shards after SetShards(4) = %d, %v", n, err)
		}
		got := map[string]int{}
		for range 40 {
			got[q.ShardOf(ctx, "hot", "")]++
		}
		for _, s := range queue.ShardNames("hot", 4) {
			if got[s] != 10 {
				t.Fatalf("jobs without a key, by shard: %v", got)
			}
		}
		for i := range 20 {
			key := fmt.Sprint("k", i)
			if a, b := q.ShardOf(ctx, "hot", key), q.ShardOf(ctx, "hot", key); a != b {
				t.Fatalf("key %s went to %s then %s", key, a, b)
			}
		}
		if err := q.SetShards(ctx, "hot", 1); err != nil {
			t.Fatal(err)
		}
		if n, _ := q.Shards(ctx, "hot"); n != 1 || q.ShardOf(ctx, "hot", "") != "hot" {
			t.Fatalf("after SetShards(1): %d shards, a job goes to %s", n, q.ShardOf(ctx, "hot", ""))
		}
	})
}

func TestSetShards_OfAPausedRoutePausesItsNewShards(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Ops.Pause(ctx, "hot"); err != nil {
			t.Fatal(err)
		}
		if err := q.SetShards(ctx, "hot", 5); err != nil {
			t.Fatal(err)
		}
		names := queue.ShardNames("hot", 5)
		paused, err := q.Ops.PausedRoutes(ctx, names)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range names {
			if !paused[s] {
				t.Fatalf("shard %s of a paused route is not paused: %v", s, paused)
			}
		}
	})
}

func TestHolding_ReadyScheduledOrLeasedJobsButNotDeadOnes(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := q.Now()
		enqueue := func(route string, runAt time.Time) {
			t.Helper()
			j := job(t, route)
			j.RunAt = runAt
			if _, err := q.Jobs.Enqueue(ctx, route, queue.Normal, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
		}
		enqueue("ready", time.Time{})
		enqueue("later", now.Add(time.Hour))
		enqueue("leased", time.Time{})
		if ds, err := q.Jobs.Fetch(ctx, "leased", queue.Priorities, 1, now.Add(time.Minute), now); err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %d, %v", len(ds), err)
		}
		enqueue("dead", time.Time{})
		ds, err := q.Jobs.Fetch(ctx, "dead", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %d, %v", len(ds), err)
		}
		if out, err := q.Jobs.Fail(ctx, ds[0], queue.Failure{Message: "boom", Final: true, Record: []byte("rec"), TTL: time.Minute}, now); out != queue.EndDead || err != nil {
			t.Fatalf("fail = %v, %v", out, err)
		}
		got, err := q.Holding(ctx, []string{"ready", "later", "leased", "dead", "empty"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"ready": true, "later": true, "leased": true, "dead": false, "empty": false}
		for r, w := range want {
			if got[r] != w {
				t.Errorf("Holding(%s) = %v, want %v", r, got[r], w)
			}
		}
	})
}
