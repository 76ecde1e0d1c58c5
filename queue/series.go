package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The stats series of a route — its per-minute counts and time buckets, what
// the charts and GET /api/v1/stats show — lives in one hash per hour
// (Keys.Series), so that a day is 24 reads per route and an hour at most
// two. Its fields are "<minute of the hour>:<what>", what being one of the
// Series* counters or a time bucket: "w<i>" counts jobs whose wait from
// enqueue (or due time) to start fell in bucket i, "t<i>" runs whose time
// fell in it. The scripts that count a transition add to the hash of the hour
// of their `now` (bn_series in scripts/_prelude.lua), so the series costs a
// few HINCRBYs per call, not per job: a batch of acks adds its counts and
// buckets summed.
const (
	SeriesEnqueued  = "e"
	SeriesProcessed = "p"
	SeriesFailed    = "f"
	SeriesRetried   = "r"
	SeriesDead      = "d"
	SeriesCanceled  = "c"
)

// Buckets of times in the series: bucket 0 holds times under 1 ms, bucket i
// times in [2^(i-1), 2^i) ms, the last one everything above.
const SeriesBuckets = 28

// SeriesBucket is the bucket of d.
func SeriesBucket(d time.Duration) int {
	ms := d.Milliseconds()
	i := 0
	for ms > 0 && i < SeriesBuckets-1 {
		ms >>= 1
		i++
	}
	return i
}

// SeriesBucketBound is the upper bound of bucket i: a percentile read from
// the buckets is at most this far above the truth (a factor of 2).
func SeriesBucketBound(i int) time.Duration {
	if i <= 0 {
		return time.Millisecond
	}
	return time.Duration(int64(1)<<i) * time.Millisecond
}

// HourOf is the start of the series hour of t, in unix seconds.
func HourOf(t time.Time) int64 {
	s := t.Unix()
	return s - s%3600
}

// Minute is one minute of a route's stats series.
type Minute struct {
	At     time.Time        // start of the minute
	Counts map[string]int64 // by Series* name
	Wait   [SeriesBuckets]int64
	Run    [SeriesBuckets]int64
}

// Add adds o's counts and buckets to m.
func (m *Minute) Add(o Minute) {
	if m.Counts == nil {
		m.Counts = map[string]int64{}
	}
	for k, v := range o.Counts {
		m.Counts[k] += v
	}
	for i := range m.Wait {
		m.Wait[i] += o.Wait[i]
		m.Run[i] += o.Run[i]
	}
}

// Series reads the minutes from `from` to `to` of the given routes, summed
// across routes, oldest first, every minute present (zero when nothing
// happened). One pipelined round trip of an HGETALL per route and hour.
func (o Ops) Series(ctx context.Context, routes []string, from, to time.Time) ([]Minute, error) {
	first, last := from.Truncate(time.Minute), to.Truncate(time.Minute)
	if last.Before(first) {
		return nil, fmt.Errorf("stats series: %s is before %s", to, from)
	}
	out := make([]Minute, int(last.Sub(first)/time.Minute)+1)
	for i := range out {
		out[i] = Minute{At: first.Add(time.Duration(i) * time.Minute), Counts: map[string]int64{}}
	}
	pipe := o.q.rdb.Pipeline()
	var cmds []*redis.MapStringStringCmd
	var hours []int64
	for _, r := range routes {
		k := o.q.Keys(r)
		for h := HourOf(first); h <= HourOf(last); h += 3600 {
			cmds = append(cmds, pipe.HGetAll(ctx, k.Series(h)))
			hours = append(hours, h)
		}
	}
	if len(cmds) == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("stats series: %w", err)
	}
	for i, c := range cmds {
		fields, err := c.Result()
		if err != nil {
			continue // a series key of another type: garbage, nothing to read
		}
		for f, v := range fields {
			m, what, ok := strings.Cut(f, ":")
			minute, err1 := strconv.Atoi(m)
			n, err2 := strconv.ParseInt(v, 10, 64)
			if !ok || err1 != nil || err2 != nil || minute < 0 || minute > 59 || n < 0 {
				continue // garbage: counts are for charts, never a failure
			}
			at := time.Unix(hours[i]+int64(minute)*60, 0)
			j := int(at.Sub(first) / time.Minute)
			if at.Before(first) || j >= len(out) {
				continue
			}
			if len(what) > 1 && (what[0] == 'w' || what[0] == 't') {
				if b, err := strconv.Atoi(what[1:]); err == nil && b >= 0 && b < SeriesBuckets {
					if what[0] == 'w' {
						out[j].Wait[b] += n
					} else {
						out[j].Run[b] += n
					}
				}
				continue
			}
			out[j].Counts[what] += n
		}
	}
	return out, nil
}

// isWrongType reports whether err is Redis refusing a command on a key of
// another type: garbage to step over, not a failure of the call.
func isWrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }
