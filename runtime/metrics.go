package runtime

import (
	"context"
	"log/slog"
	"net/http"

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
		}
		if !d.OldestPending.IsZero() {
			out[i].OldestPendingAge = now.Sub(d.OldestPending)
		}
	}
	return out
}

// MetricsHandler serves this client's metrics in the Prometheus formats:
// the jobs its tasks enqueued, the runs of its workers (outcomes, run and
// wait times, running jobs and slots), and the depths of every route's
// queues, read from Redis when scraped (docs/METRICS.md lists them all). The
// HTTP API mounts it at /metrics.
func (c *Client) MetricsHandler() http.Handler { return c.metrics.Handler() }

// QueueDepthMetrics turns the queue gauges of MetricsHandler (bananas_queue_*,
// bananas_route_paused) on, the default, or off. They are the same numbers
// read by every process from the same Redis: a deployment that would rather
// not read them once per process and scrape may keep them on one process
// only (docs/METRICS.md).
func (c *Client) QueueDepthMetrics(on bool) {
	var f metrics.DepthFunc
	if on {
		f = depthReader(c.q)
	}
	c.metrics.ReadDepths(f)
}
