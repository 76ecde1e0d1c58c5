package admin

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Stats reads the last window (at most 24 h) of the per-minute stats series
// of every route, as any process sees it: the series lives in Redis
// (queue.Ops.Series).
func (in *Inspector) Stats(ctx context.Context, window time.Duration) (Stats, error) {
	if window <= 0 || window > 24*time.Hour {
		return Stats{}, badQuery("window", "window %s: want up to 24h", window)
	}
	routes, err := in.q.Routes(ctx)
	if err != nil {
		return Stats{}, err
	}
	now := in.q.Now()
	minutes, err := in.q.Ops.Series(ctx, routes, now.Add(-window+time.Minute), now)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Window: window, Points: make([]StatsPoint, len(minutes))}
	for i, m := range minutes {
		st.Points[i] = StatsPoint{
			At: m.At, Enqueued: m.Counts[queue.SeriesEnqueued], Processed: m.Counts[queue.SeriesProcessed],
			Failed: m.Counts[queue.SeriesFailed], Retried: m.Counts[queue.SeriesRetried], Dead: m.Counts[queue.SeriesDead],
			Canceled: m.Counts[queue.SeriesCanceled],
			WaitP50:  percentile(m.Wait, 0.50), WaitP99: percentile(m.Wait, 0.99),
			RunP50: percentile(m.Run, 0.50), RunP99: percentile(m.Run, 0.99),
		}
	}
	return st, nil
}

// percentile is the upper bound of the bucket holding the p-quantile.
func percentile(b [queue.SeriesBuckets]int64, p float64) time.Duration {
	var total int64
	for _, n := range b {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := int64(p*float64(total) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, n := range b {
		seen += n
		if seen >= rank {
			return queue.SeriesBucketBound(i)
		}
	}
	return queue.SeriesBucketBound(len(b) - 1)
}
