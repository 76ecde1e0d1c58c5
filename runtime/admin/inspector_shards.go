package admin

import (
	"context"

	"github.com/bananas-go/bananas/queue"
)

// Shards returns the shard count of route: 1 for a route never sharded.
func (in *Inspector) Shards(ctx context.Context, route string) (int, error) {
	if err := queue.CheckRoute(route); err != nil {
		return 0, badQuery("route", "route: %w", err)
	}
	return in.q.Shards(ctx, route)
}

// SetShards spreads route over n shards (1 to 256; 1 unshards it), each a
// hash tag of its own chosen so that the shards fall evenly over a Redis
// Cluster's masters. It takes effect in every producer and worker within
// queue.ShardRefresh, in this process at once; no job is lost: the shards of
// the earlier count are drained by the workers of the route. A route need
// not exist yet.
func (in *Inspector) SetShards(ctx context.Context, route string, n int) error {
	if err := queue.CheckRoute(route); err != nil {
		return badQuery("route", "route: %w", err)
	}
	if err := queue.CheckShards(n); err != nil {
		return badQuery("shards", "%w", err)
	}
	if err := in.q.SetShards(ctx, route, n); err != nil {
		return err
	}
	return in.copyRouteLimits(ctx, route)
}

// copyRouteLimits gives every shard of route the route's own limits (those
// of its first shard, the route itself), so that a shard made by SetShards
// is limited as the others are.
func (in *Inspector) copyRouteLimits(ctx context.Context, route string) error {
	l, err := in.q.Flows.RouteLimits(ctx, route)
	if err != nil || l.IsZero() {
		return err
	}
	shards, err := in.shardsOf(ctx, route)
	if err != nil {
		return err
	}
	for _, s := range shards {
		if err := in.q.Flows.SetRouteLimits(ctx, s, l); err != nil {
			return err
		}
	}
	return nil
}
