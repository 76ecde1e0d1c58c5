package runtime

import (
	"context"
	"log/slog"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/metrics"
)

// newMetrics returns the metrics of a client over q, its queue gauges read
// from q at scrape time.
func newMetrics(q *queue.Queue) *metrics.Set {
	s := metrics.New()
	s.ReadDepths(depthReader(q))
	return s
}

// depthReader reads the depths of every known route: the set of routes,
// then the depths in one pipelined round trip (queue.Ops.Depths) — a few
// commands per route whatever the queues hold, never a scan of them. A
// sharded route is one series, its shards summed.
func depthReader(q *queue.Queue) metrics.DepthFunc {
	return func(ctx context.Context) ([]metrics.Depth, error) {
		routes, err := q.Routes(ctx)
		if err == nil {
			var ds []queue.Depth
			if ds, err = q.Ops.Depths(ctx, routes); err == nil {
				return toMetricDepths(queue.MergeShards(ds), q), nil
			}
		}
		// Counted by the collector; the line says why.
		slog.Default().Warn("bananas: metrics: reading the queue depths failed; their gauges are left out of this scrape", "err", err)
		return nil, err
	}
}

func toMetricDepths(ds []queue.Depth, q *queue.Queue) []metrics.Depth {
	now := q.Now() // ids carry the producer's time on Redis's clock
	out := make([]metrics.Depth, len(ds))
	for i, d := range ds {
		out[i] = metrics.Depth{
			Route: d.Route, High: d.High, Normal: d.Normal, Low: d.Low,
			Scheduled: d.Scheduled, Active: d.Active, Dead: d.Dead, Paused: d.Paused,
			Throttled: d.Throttled, LimitRunning: d.KeyedRunning,
			Expired: d.Expired,
		}
		if !d.OldestPending.IsZero() {
			out[i].OldestPendingAge = now.Sub(d.OldestPending)
		}
	}
	return out
}

// countEnds, the metrics' subscriber to the ends of runs (an inline
// HookWorkEnd of every client), counts the ends of a worker's runs in its
// client's metrics, those its reaper recovered included: the run was another worker's (or
// this one's, its failure unwritten), which did not count it, so each
// failed run is counted once, by whoever recorded its end.
type countEnds struct{ m *metrics.Set }

func (c countEnds) JobEnded(e bananastype.JobEnd) {
	s := c.m.For(e.Route, string(e.Priority), e.Task)
	switch e.Ending {
	case queue.EndCompleted:
		s.Succeeded()
	case queue.EndRetrying:
		s.Failed()
		s.Retried()
	case queue.EndDead:
		s.Failed()
		s.Dead()
	case queue.EndSnoozed:
		s.Snoozed()
	case queue.EndCanceled:
		s.Canceled()
	}
}
