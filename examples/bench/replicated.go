package main

import (
	"context"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

// replicated measures what runtime.WaitForReplicas costs the single enqueue:
// the enqueue scenario through a client that waits for one replica and
// through one that does not, alternating, three rounds each, on a server
// with a replica (scripts/bench-replica.sh starts one). It reports the
// medians and their ratio, under names of their own: make bench-compare
// reads make bench's output, and enqueue_jobs_per_s is the peer harness's.
func replicated(ctx context.Context, url, ns string) {
	plain, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		log.Fatal(err)
	}
	defer plain.Close()
	info, err := plain.Redis().Info(ctx, "replication").Result()
	if err != nil {
		log.Fatal(err)
	}
	if !strings.Contains(info, "connected_slaves:") || strings.Contains(info, "connected_slaves:0") {
		log.Fatal("-replicated needs a server with a connected replica (scripts/bench-replica.sh starts one)")
	}
	waiting, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns), runtime.WaitForReplicas(1, time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer waiting.Close()
	rate := func(c *runtime.Client) float64 {
		start := time.Now()
		benchkit.Parallel(*producers, *n, func(int) {
			if _, err := tasks.Noop.With(c).Enqueue(ctx, payload); err != nil {
				log.Fatal(err)
			}
		})
		r := float64(*n) / time.Since(start).Seconds()
		cleanup(ctx, c.Redis(), ns)
		return r
	}
	var plainRates, waitingRates []float64
	for round := range 3 {
		note("replicated: round %d of 3, %d single enqueues from %d goroutines each way", round+1, *n, *producers)
		plainRates = append(plainRates, rate(plain))
		waitingRates = append(waitingRates, rate(waiting))
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	p, w := median(plainRates), median(waitingRates)
	report("replica_plain_enqueue_jobs_per_s", p)
	report("replica_wait_enqueue_jobs_per_s", w)
	report("replica_wait_vs_plain", w/p)
}
