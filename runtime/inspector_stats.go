package runtime

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// StatsPoint is one minute of history across every route.
type StatsPoint struct {
	At                                                   time.Time // start of the minute
	Enqueued, Processed, Failed, Retried, Dead, Canceled int64
	// Percentiles of the minute's waits (enqueue, or due time, to start) and
	// run times, read from power-of-two buckets: each is the upper bound of
	// its bucket, at most twice the true value; 0 when nothing started or ran.
	WaitP50, WaitP99, RunP50, RunP99 time.Duration
}

// Stats is the per-minute history of a window, oldest minute first, every
// minute present.
type Stats struct {
	Window time.Duration
	Points []StatsPoint
}

// Stats reads the last window (at most 24 h) of per-minute history of every
// route, as any process sees it: the history lives in Redis.
func (in *Inspector) Stats(ctx context.Context, window time.Duration) (Stats, error) {
	if window <= 0 || window > 24*time.Hour {
		return Stats{}, badQuery("window", "window %s: want up to 24h", window)
	}
	routes, err := in.c.q.Routes(ctx)
	if err != nil {
		return Stats{}, err
	}
	now := in.c.q.Now()
	minutes, err := in.c.q.History(ctx, routes, now.Add(-window+time.Minute), now)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Window: window, Points: make([]StatsPoint, len(minutes))}
	for i, m := range minutes {
		st.Points[i] = StatsPoint{
			At: m.At, Enqueued: m.Counts[queue.HistoryEnqueued], Processed: m.Counts[queue.HistoryProcessed],
			Failed: m.Counts[queue.HistoryFailed], Retried: m.Counts[queue.HistoryRetried], Dead: m.Counts[queue.HistoryDead],
			Canceled: m.Counts[queue.HistoryCanceled],
			WaitP50:  percentile(m.Wait, 0.50), WaitP99: percentile(m.Wait, 0.99),
			RunP50: percentile(m.Run, 0.50), RunP99: percentile(m.Run, 0.99),
		}
	}
	return st, nil
}

// percentile is the upper bound of the bucket holding the p-quantile.
func percentile(b [queue.HistoryBuckets]int64, p float64) time.Duration {
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
			return queue.HistoryBucketBound(i)
		}
	}
	return queue.HistoryBucketBound(len(b) - 1)
}

// statsJSON is GET /api/v1/stats and `stats --json`.
type statsJSON struct {
	WindowMS int64       `json:"window_ms"`
	Points   []pointJSON `json:"points"`
}

type pointJSON struct {
	At        jsonTime `json:"at"`
	Enqueued  int64    `json:"enqueued"`
	Processed int64    `json:"processed"`
	Failed    int64    `json:"failed"`
	Retried   int64    `json:"retried"`
	Dead      int64    `json:"dead"`
	Canceled  int64    `json:"canceled"`
	WaitP50MS int64    `json:"wait_p50_ms"`
	WaitP99MS int64    `json:"wait_p99_ms"`
	RunP50MS  int64    `json:"run_p50_ms"`
	RunP99MS  int64    `json:"run_p99_ms"`
}

func statsView(s Stats) statsJSON {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return statsJSON{WindowMS: s.Window.Milliseconds(), Points: views(s.Points, func(p StatsPoint) pointJSON {
		return pointJSON{At: jsonTime(p.At), Enqueued: p.Enqueued, Processed: p.Processed, Failed: p.Failed, Retried: p.Retried,
			Dead: p.Dead, Canceled: p.Canceled, WaitP50MS: ms(p.WaitP50), WaitP99MS: ms(p.WaitP99), RunP50MS: ms(p.RunP50), RunP99MS: ms(p.RunP99)}
	})}
}
