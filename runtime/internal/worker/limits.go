package worker

import (
	"context"
	"fmt"
	"slices"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
)

// storeLimits stores the limits of every task of cfg on its route, on
// every route the worker takes jobs from (a job can be sent to another
// route than its task's, and the limits must hold there too), and on each
// of their shards; zero limits too, so that limits removed from the code
// are removed from Redis (a worker's start is when they are brought up to
// date).
func storeLimits(ctx context.Context, cfg *Config) error {
	shardsOf := map[string][]string{}
	for _, t := range cfg.Tasks {
		routes := append([]string{t.Route}, cfg.Routes...)
		for _, route := range routes {
			if _, read := shardsOf[route]; read {
				continue
			}
			shards, err := routeshards.Of(ctx, cfg.Queue, route)
			if err != nil {
				return fmt.Errorf("store the limits of task %s: read the shards of route %s: %w", t.Name, route, err)
			}
			shardsOf[route] = shards
		}
		for _, route := range routes {
			for _, s := range shardsOf[route] {
				if err := cfg.Queue.Flows.SetTaskLimits(ctx, s, t.Name, t.Limits); err != nil {
					return fmt.Errorf("store the limits of its tasks: %w", err) // err names the task and the shard
				}
			}
		}
	}
	return nil
}

// storeShardLimits stores, on shards the worker has just come to serve (a
// route's shard count changed), the limits of its tasks (as storeLimits:
// on the tasks' own routes and the worker's), so that a new shard limits
// the flows that move to it. A failure is warned of: the worker's next
// start stores them again.
func storeShardLimits(ctx context.Context, cfg *Config, shards []string) {
	for _, sh := range shards {
		base := queue.ShardBase(sh)
		for _, t := range cfg.Tasks {
			if t.Route != base && !slices.Contains(cfg.Routes, base) {
				continue
			}
			if err := cfg.Queue.Flows.SetTaskLimits(ctx, sh, t.Name, t.Limits); err != nil {
				cfg.Logger.Warn("bananas: cannot store the limits of a task on a new shard of its route", "task", t.Name, "shard", sh, "err", err)
			}
		}
	}
}
