package worker

import (
	"context"
	"log/slog"
	"testing"

	"github.com/bananas-go/bananas/queue"
)

// A worker stores each task's limits on the task's own route and on every
// route the worker takes, and a task whose limits were removed from the
// code has them removed (zero limits are stored too).
func TestStoreLimits_OnTheTasksRouteAndEveryRouteTheWorkerTakes(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	ctx := context.Background()
	capped := queue.Limits{MaxRunning: 2}
	if err := q.Flows.SetTaskLimits(ctx, "mail", "old", queue.Limits{MaxRunning: 9}); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Queue: q, Routes: []string{"images", "mail"}, Logger: slog.New(slog.DiscardHandler),
		Tasks: []Task{{Name: "resize", Route: "gpu", Limits: capped}, {Name: "old", Route: "mail"}}}
	if err := storeLimits(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"gpu", "images", "mail"} {
		got, err := q.Flows.TaskLimits(ctx, route)
		if err != nil {
			t.Fatal(err)
		}
		if got["resize"] != capped {
			t.Fatalf("route %s: limits of resize = %+v; want %+v", route, got["resize"], capped)
		}
		if !got["old"].IsZero() {
			t.Fatalf("route %s: limits of old = %+v; want none (removed from the code)", route, got["old"])
		}
	}
	// A shard the worker comes to serve gets the limits of the tasks of its
	// route, and no other.
	shard := queue.ShardNames("images", 2)[1]
	storeShardLimits(ctx, cfg, []string{shard})
	got, err := q.Flows.TaskLimits(ctx, shard)
	if err != nil || got["resize"] != capped {
		t.Fatalf("shard %s: limits = %v, %v; want resize's", shard, got, err)
	}
}
