package main

import (
	"context"
	"log"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// parallel calls f total times from `workers` goroutines.
func parallel(workers, total int, f func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(total) {
				f()
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

func usedMemory(ctx context.Context, rc *redis.Client) int64 {
	info, err := rc.Info(ctx, "memory").Result()
	if err != nil {
		log.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
