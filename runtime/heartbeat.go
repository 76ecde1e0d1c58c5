package runtime

import (
	"context"
	"log/slog"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/worker"
)

// routeTakers counts, per route, the live workers (from their heartbeats)
// that take its jobs.
func (c *Client) routeTakers(ctx context.Context) (map[string]int, error) {
	ws, err := c.Workers(ctx)
	if err != nil {
		return nil, err
	}
	return worker.Takers(ws), nil
}

// Workers lists the live workers of the client's namespace, by id.
func (c *Client) Workers(ctx context.Context) ([]admin.Worker, error) {
	return worker.Live(ctx, c.q)
}

// warnIfUnserved arms a check, after unservedAfter, that a live worker takes
// the route of job id, and logs a warning (slog.Default) when none does: an
// Await on such a job would otherwise wait without a word. It returns the
// function that disarms it.
func (c *Client) warnIfUnserved(id string) (stop func()) {
	route, ok := queue.RouteOf(id)
	if !ok || c.unservedAfter <= 0 {
		return func() {}
	}
	t := time.AfterFunc(c.unservedAfter, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if takers, err := c.routeTakers(ctx); err == nil && takers[queue.ShardBase(route)] == 0 {
			slog.Default().Warn("bananas: waiting for a job of a route that no live worker takes; it runs when a worker of the route starts",
				"job", id, "route", route, "waited", c.unservedAfter)
		}
	})
	return func() { t.Stop() }
}
