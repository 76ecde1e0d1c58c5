package main

import (
	"context"
	"flag"
	"log"
	"strconv"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var uniqueMode = flag.Bool("unique", false, "instead of the scenarios: single enqueues with a unique key (runtime.Unique, UniqueBy) against plain ones, in the same run")

// uniqueBench measures what a unique key costs an enqueue: rounds of n
// single enqueues from `producers` goroutines, plain and unique in turn
// (each unique job's key its own, so none is a duplicate), and reports the
// median rate of each, their ratio, and the client's and Redis's CPU per
// job of each: what the key itself costs (a SET NX PX of a new string).
func uniqueBench(ctx context.Context, c *runtime.Client) {
	const rounds = 3
	per := *n / 2
	note("unique: %d rounds of %d single enqueues from %d goroutines, plain then unique", rounds, per, *producers)
	var plain, unique []float64
	cpu := map[string][2][]float64{}
	seq := 0
	for range rounds {
		for _, kind := range []string{"plain", "unique"} {
			base := seq
			seq += per
			opts := []runtime.Option{}
			if kind == "unique" {
				opts = []runtime.Option{runtime.Unique(time.Hour), runtime.UniqueBy("To")}
			}
			start := time.Now()
			span := benchkit.StartCPU(redisInfo(ctx, c))
			benchkit.Parallel(*producers, per, func(i int) {
				p := payload
				p.To = "user" + strconv.Itoa(base+i) + "@example.com"
				if _, err := tasks.Noop.Enqueue(ctx, p, opts...); err != nil {
					log.Fatal(err)
				}
			})
			rate := float64(per) / time.Since(start).Seconds()
			clientUS, redisUS := span.PerJob(per)
			got := cpu[kind]
			got[0], got[1] = append(got[0], clientUS), append(got[1], redisUS)
			cpu[kind] = got
			if kind == "plain" {
				plain = append(plain, rate)
			} else {
				unique = append(unique, rate)
			}
		}
	}
	p, u := benchkit.Median(plain), benchkit.Median(unique)
	report("plain_enqueue_jobs_per_s", p)
	report("unique_enqueue_jobs_per_s", u)
	report("unique_enqueue_ratio", u/p)
	for _, kind := range []string{"plain", "unique"} {
		report("client_cpu_us_per_job_"+kind+"_enqueue", benchkit.Median(cpu[kind][0]))
		report("redis_cpu_us_per_job_"+kind+"_enqueue", benchkit.Median(cpu[kind][1]))
	}
}
