package engine

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// retention deletes the dead-lettered jobs of the worker's routes older than
// queue.DeadRetention, at start and hourly.
type retention struct{ cfg *Config }

// Run purges until ctx ends.
func (p *retention) Run(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	q, log := p.cfg.Queue, p.cfg.Logger
	outage := scheduler.NewOutageLog(log, "dead-letter retention")
	for ok := true; ok; ok = next(ctx, t) {
		for _, route := range p.cfg.Routes {
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
	}
}
