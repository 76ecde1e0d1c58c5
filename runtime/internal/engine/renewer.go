package engine

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// renewer extends the leases of the runs in flight every Lease/3, cancels
// the runs whose lease was lost (reaped after a stall, handed back), and
// acts on cancel requests a worker missed while its subscription was down.
type renewer struct {
	cfg    *Config
	runs   *runs
	outage *scheduler.OutageLog // per route: a renewal that fails on each tick of an outage is logged once
	exec   *executor
}

// Run renews until ctx ends.
func (n *renewer) Run(ctx context.Context) {
	t := time.NewTicker(n.cfg.Lease / 3)
	defer t.Stop()
	for next(ctx, t) {
		byRoute, _ := n.runs.byRoute()
		for route, rs := range byRoute {
			n.renew(ctx, route, rs)
		}
	}
}

// renew extends the leases of route's runs rs.
func (n *renewer) renew(ctx context.Context, route string, rs []*run) {
	q, log := n.cfg.Queue, n.cfg.Logger
	ds := make([]*queue.Dispatch, len(rs))
	ids := make([]string, len(rs))
	for i, r := range rs {
		ds[i], ids[i] = r.d, r.d.ID
	}
	lost, err := q.Renew(ctx, route, ds, q.Now().Add(n.cfg.Lease))
	if err != nil {
		n.outage.Failed(route, err)
		return
	}
	// Cancel requests this worker missed (a reconnect of its subscription).
	asked, err := q.CancelRequests(ctx, route, ids)
	if err != nil {
		n.outage.Failed(route, err)
	} else {
		n.outage.OK(route)
	}
	for _, id := range asked {
		n.exec.cancelJob(id)
	}
	for _, d := range lost {
		for _, r := range rs {
			if r.d == d && !r.recording.Load() {
				log.Warn("bananas: lease lost; canceling the run", "job", d.ID)
				r.cancel(errLeaseLost)
				n.runs.untrack(r)
			}
		}
	}
}
