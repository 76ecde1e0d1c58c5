package main

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// parallel calls f(0..total-1) from `workers` goroutines.
func parallel(workers, total int, f func(i int)) {
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

// paced calls f perSec times a second, each in its own goroutine, for d and
// returns the count.
func paced(perSec int, d time.Duration, f func()) int {
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

// waitFor polls cond until it holds (true) or the limit passes (false).
func waitFor(cond func() bool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
