package engine

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// retention deletes the dead-lettered jobs of the worker's routes older than
// queue.DeadRetention, at start and hourly, and prunes the routes set of the
// routes idle for queue.RouteIdleTTL (see queue.Ops.PruneRoutes) at the same
// pace: a route is pruned 24 to 26 hours after it was last busy.
type retention struct{ cfg *Config }

// Run purges until ctx ends.
func (p *retention) Run(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	q, log := p.cfg.Queue, p.cfg.Logger
	outage := scheduler.NewOutageLog(log, "dead-letter retention")
	pruning := scheduler.NewOutageLog(log, "route pruning")
	for ok := true; ok; ok = next(ctx, t) {
		for _, route := range p.cfg.kept() {
			n, err := q.Purge(ctx, route, q.Now().Add(-queue.DeadRetention))
			switch {
			case err != nil && ctx.Err() == nil:
				outage.Failed(route, err)
			case err == nil:
				outage.OK(route)
				if n > 0 {
					log.Info("bananas: deleted expired dead-lettered jobs", "route", route, "count", n)
				}
			}
		}
		p.pruneRoutes(ctx, pruning)
	}
}

// pruneRoutes runs one pass of route pruning, keeping the routes served; a
// failure goes to outage, the pruning's own (no route of its own).
func (p *retention) pruneRoutes(ctx context.Context, outage *scheduler.OutageLog) {
	if p.cfg.ServedRoutes == nil {
		return
	}
	q, log := p.cfg.Queue, p.cfg.Logger
	keep, err := p.cfg.ServedRoutes(ctx)
	if err == nil {
		var pruned []string
		pruned, err = q.PruneRoutes(ctx, keep, q.Now())
		if len(pruned) > 0 {
			log.Info("bananas: pruned idle routes from the routes set", "count", len(pruned), "idle_for", queue.RouteIdleTTL)
		}
	}
	switch {
	case err != nil && ctx.Err() == nil:
		outage.Failed("", err)
	case err == nil:
		outage.OK("")
	}
}
