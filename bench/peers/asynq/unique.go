package main

import (
	"context"
	"log"
	"slices"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/benchkit"
)

// uniqueScenario is the project's `-unique` scenario for asynq: rounds of
// n/2 single enqueues from `producers` goroutines, plain then with
// asynq.Unique(time.Hour) (its lock is a SET NX of a key hashed from the
// task's type and payload), each job's payload distinct. It reports the
// medians of the rounds under the project's names, so the rows sit side by
// side: plain_enqueue_jobs_per_s, unique_enqueue_jobs_per_s,
// unique_enqueue_ratio, and CPU per job of each kind.
func uniqueScenario(ctx context.Context, rc *redis.Client, client *asynq.Client) {
	const rounds = 3
	per := *n / 2
	note("unique: %d rounds of %d single enqueues from %d goroutines, plain then unique", rounds, per, *producers)
	info := func() string { s, _ := rc.Info(ctx, "cpu").Result(); return s }
	rates := map[string][]float64{}
	cpu := map[string][2][]float64{}
	seq := 0
	for range rounds {
		for _, kind := range []string{"plain", "unique"} {
			base := seq
			seq += per
			var opts []asynq.Option
			if kind == "unique" {
				opts = []asynq.Option{asynq.Unique(time.Hour)}
			}
			span := benchkit.StartCPU(info)
			start := time.Now()
			benchkit.Parallel(*producers, per, func(i int) {
				p := append(slices.Clip(payload), strconv.Itoa(base+i)...)
				if _, err := client.Enqueue(asynq.NewTask("noop", p), opts...); err != nil {
					log.Fatal(err)
				}
			})
			rates[kind] = append(rates[kind], float64(per)/time.Since(start).Seconds())
			clientUS, redisUS := span.PerJob(per)
			got := cpu[kind]
			got[0], got[1] = append(got[0], clientUS), append(got[1], redisUS)
			cpu[kind] = got
		}
	}
	p, u := benchkit.Median(rates["plain"]), benchkit.Median(rates["unique"])
	report("plain_enqueue_jobs_per_s", p)
	report("unique_enqueue_jobs_per_s", u)
	report("unique_enqueue_ratio", u/p)
	for _, kind := range []string{"plain", "unique"} {
		report("client_cpu_us_per_job_"+kind+"_enqueue", benchkit.Median(cpu[kind][0]))
		report("redis_cpu_us_per_job_"+kind+"_enqueue", benchkit.Median(cpu[kind][1]))
	}
}
