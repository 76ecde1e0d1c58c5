package engine

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/scheduler"
)

// reaper recovers the jobs of the worker's routes whose lease expired: their
// worker died or lost Redis. Each counts a failed attempt, but for one asked
// to cancel while it ran, which ends canceled.
type reaper struct {
	cfg    *Config
	outage *scheduler.OutageLog // per route
}

// expiredLease is the error a recovered job records.
const expiredLease = "lease expired: the worker running it stopped renewing (crashed or lost Redis)"

// Run reaps every route at once and then every reapInterval until ctx ends.
func (p *reaper) Run(ctx context.Context) {
	t := time.NewTicker(p.interval())
	defer t.Stop()
	for tick, ok := 0, true; ok; tick, ok = tick+1, next(ctx, t) {
		sweep := tick%sweepEvery == 0
		for _, route := range p.cfg.kept() {
			p.reap(ctx, route)
			if sweep {
				p.sweep(ctx, route)
			}
		}
	}
}

// sweepEvery is how many reaps apart the reaper repairs the route's flows
// that garbage stranded (queue.Flows.Sweep): parked at a cap whose slots are
// gone without a release, or with jobs waiting in no ring, not parked and
// not held. Garbage only, which may wait that long.
const sweepEvery = 30

// sweep runs queue.Flows.Sweep on route, saying what it repaired.
func (p *reaper) sweep(ctx context.Context, route string) {
	n, err := p.cfg.Queue.SweepFlows(ctx, route, p.cfg.Queue.Now())
	switch {
	case err != nil && ctx.Err() == nil:
		p.cfg.Logger.Warn("bananas: cannot sweep the flows of a route", "route", route, "err", err)
	case n > 0:
		p.cfg.Logger.Warn("bananas: flows that garbage stranded (slots gone, or in no ring) were put back", "route", route, "flows", n)
	}
}

// interval is how often the worker looks for expired leases on its routes:
// at most a second, so that the slots of a killed worker's keyed jobs (see
// queue/flow.go), which its reaped leases free, are back within its lease
// and a second. A look costs one read of the route's active set.
func (p *reaper) interval() time.Duration {
	return min(max(p.cfg.Lease/4, 50*time.Millisecond), time.Second)
}

// reap recovers the expired jobs of route and tells their ends: those
// recorded, even when a later page of the same pass failed.
func (p *reaper) reap(ctx context.Context, route string) {
	q, log := p.cfg.Queue, p.cfg.Logger
	now := q.Now() // leases are judged on Redis's clock
	type decided struct {
		e queue.Expired
		v queue.Verdict
	}
	asked := map[string]decided{}
	out, err := q.Reap(ctx, route, now, func(e queue.Expired) queue.Verdict {
		v := p.verdict(e, now)
		asked[e.ID] = decided{e, v}
		return v
	})
	for id, o := range out {
		switch o {
		case queue.EndRetrying:
			log.Warn("bananas: recovered a job whose lease expired; retry scheduled", "job", id, "route", route)
		case queue.EndDead:
			log.Warn("bananas: recovered a job whose lease expired; out of retries, dead-lettered", "job", id, "route", route)
		case queue.EndCanceled:
			log.Info("bananas: recovered a job whose lease expired; it was asked to cancel, so it ends canceled", "job", id, "route", route)
		}
		if a, ok := asked[id]; ok {
			if end, ok := p.cfg.reapedEnd(a.e, route, o, a.v, now); ok {
				p.cfg.tell(end)
			}
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			p.outage.Failed(route, err)
		}
		return
	}
	p.outage.OK(route)
}

// verdict is what becomes of e, an expired job, at now: it ends canceled if
// a cancel was asked while it ran, else it counts a failed attempt.
func (p *reaper) verdict(e queue.Expired, now time.Time) queue.Verdict {
	if e.CancelRequested {
		encoded, _ := results.Encode(expiredRecord(e, canceledLost, true, now))
		return queue.Verdict{Record: encoded, TTL: ttlOr(e.Envelope.FailureTTL, p.cfg.FailureTTL)}
	}
	encoded, _ := results.Encode(expiredRecord(e, expiredLease, false, now))
	return queue.Verdict{
		RetryAt: now.Add(p.cfg.RetryDelay(e.Envelope, e.Attempts+1)), Record: encoded,
		TTL: ttlOr(e.Envelope.FailureTTL, p.cfg.FailureTTL),
	}
}
