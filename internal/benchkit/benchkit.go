// Package benchkit is what the benchmark harnesses share — this project's
// (examples/bench) and the peers' (bench/peers/asynq, bench/peers/river),
// which are modules of their own — so that each scenario is driven and
// summed up the same way for everyone it compares: producers in parallel,
// a paced load, waiting on a condition, quantiles, and Redis's used memory.
// It imports nothing but the standard library, so a peer's module takes on
// no dependency of this project's by using it; it knows no queue.
package benchkit

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel calls f(0) to f(total-1) from workers goroutines, and returns
// when every call has.
func Parallel(workers, total int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				f(int(i))
			}
		})
	}
	wg.Wait()
}

// Paced calls f perSec times a second, each in its own goroutine, for d,
// and returns how many calls it made.
func Paced(perSec int, d time.Duration, f func()) int {
	interval := time.Second / time.Duration(perSec)
	start := time.Now()
	sent := 0
	for time.Since(start) < d {
		if w := time.Until(start.Add(time.Duration(sent) * interval)); w > 0 {
			time.Sleep(w)
		}
		go f()
		sent++
	}
	return sent
}

// WaitFor polls cond every 5 ms until it holds (true) or limit has passed
// (false).
func WaitFor(cond func() bool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Quantile is the q-quantile (0 to 1) of d, by the nearest rank below; 0
// for none.
func Quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// Median is the middle of xs (the upper one of an even count): the figure
// quoted of several runs of a scenario.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Ms is d in milliseconds, to the microsecond.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// UsedMemory reads used_memory from the text of Redis's INFO memory; 0 when
// it is not there.
func UsedMemory(info string) int64 {
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
