// Command bench is the load generator behind `make bench`. It measures
// Bananas with the scenarios and metric names of the peer harnesses in
// bench/peers (asynq, River, BullMQ, Sidekiq, Celery), so that `make bench-compare`
// (scripts/bench-compare.sh) prints them side by side:
//
//	REDIS_URL=redis://127.0.0.1:6390/0 go run ./examples/bench   # a server you started
//	go run ./examples/bench                                      # the embedded server
//
// Result lines go to stdout as `bananas <metric>=<value>`; progress, prefixed
// with #, to stderr. It works in a fresh namespace and deletes it at the end.
// What it measures of the add-ons (tracing, the task history) is in
// examples/bench/addons, a module of its own.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var (
	n         = flag.Int("n", 50000, "jobs for the enqueue and drain scenarios")
	producers = flag.Int("producers", 16, "producer goroutines for the enqueue scenario")
	conc      = flag.Int("concurrency", 64, "worker concurrency")
	rate      = flag.Int("rate", 1000, "jobs per second in the latency scenario")
	secs      = flag.Int("secs", 5, "seconds of the latency scenario")
	calls     = flag.Int("calls", 2000, "sequential Call round trips")
	delayedN  = flag.Int("delayed", 200, "jobs in the delayed-lateness scenario")
	batch     = flag.Int("batch", 1000, "jobs per EnqueueMany call")
	cpuprof   = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	role      = flag.String("role", "", "internal: 'worker' runs one worker process of the scaling scenario")
	spikeBase = flag.Int("spike", 0, "instead of the scenarios: latency at this rate, through a 10x spike of 1s, and after")
	scale     = flag.Int("scaling", 0, "instead of the scenarios: drain this many jobs with 1, 2, 4 worker processes at concurrency 1, 16, 64, 256")
	adminMode = flag.Bool("admin", false, "instead of the scenarios: the HTTP API's submissions against the Go API, and /metrics, queues, job-list and dashboard pages at -depth pending and -dead dead jobs over -routes routes")
	depth     = flag.Int("depth", 1000000, "with -admin: pending jobs")
	nroutes   = flag.Int("routes", 50, "with -admin: routes the pending jobs spread over")
	replica   = flag.Bool("replicated", false, "instead of the scenarios: the single enqueue with and without runtime.WaitForReplicas, on a server with a replica")
)

var payload = tasks.Payload{To: "user@example.com", Subject: "hello", Body: "0123456789012345678901234567890123456789"}

func main() {
	flag.Parse()
	if *cpuprof != "" {
		defer startCPUProfile(*cpuprof)()
	}
	ctx := context.Background()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "mem://"
		note("REDIS_URL not set: measuring the embedded server (mem://)")
	}
	switch {
	case *leanMode:
		leanBench(ctx, url)
		return
	case *sealMode:
		sealBench(ctx, url)
		return
	case *role == "worker":
		runWorkerChild(url, os.Getenv("BENCH_NS"), *conc)
		return
	case *scale > 0:
		scaling(ctx, url, *scale)
		return
	}
	ns := fmt.Sprintf("b%x", time.Now().UnixNano()%0xfffff) // short: key names count in the memory metric
	if *replica {
		replicated(ctx, url, ns)
		return
	}
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	defer cleanup(ctx, c.Redis(), ns)
	runtime.SetDefault(c)
	switch {
	case *idleCounts != "":
		idleWorkers(ctx, c, url, ns)
	case *spikeBase > 0:
		spike(ctx, c, *spikeBase)
	case *adminMode:
		adminBench(ctx, c, *n, *producers, *nroutes, *depth)
	case *shardCount > 0:
		shardBalance(ctx, c)
	case *flowMode:
		flowBench(ctx, c)
	case *wfMode:
		workflowBench(ctx, c, url, ns)
	case *gatherMode:
		gatherBench(ctx, c)
	case *batchedMode:
		batchedBench(ctx, c)
	case *schedN > 0:
		schedulesBench(ctx, c, ns)
	case *uniqueMode:
		uniqueBench(ctx, c)
	case *waitsMode:
		waitsBench(ctx, c)
	default:
		scenarios(ctx, c)
	}
}

// startCPUProfile profiles the whole run into path and returns the function
// that ends the profile.
func startCPUProfile(path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return pprof.StopCPUProfile
}

// scenarios runs the peer harness's scenarios in order: each after the
// previous one has left the queues empty, with one worker from drain on.
// Each but the delayed one (200 jobs over a wait of a second: the idle
// cost of that second, not a job's) also reports its CPU per job.
func scenarios(ctx context.Context, c *runtime.Client) {
	cpu := cpuPerJob(ctx, c)
	cpu("enqueue", *n, func() { enqueueScenario(ctx, c) })
	obs := &observations{}
	obs.hook(*n)
	var stop func()
	cpu("drain", *n, func() { stop = drainScenario(ctx, c, obs) })
	defer stop()
	cpu("batch", *n, func() { batchScenario(ctx, obs) })
	cpu("latency", *rate**secs, func() { latencyScenario(ctx, obs) })
	cpu("call", *calls, func() { callScenario(ctx) })
	delayedScenario(ctx, obs)
	stop()
	leanDrainScenario(ctx, c)
}

// observations is what the worker's handlers record for the scenarios that
// measure on the job's side.
type observations struct {
	noops    atomic.Int64  // no-op jobs run since the last reset
	finished chan struct{} // closed when noops reaches the scenario's n
	latOn    atomic.Bool   // ping latencies count only from the latency scenario on
	mu       sync.Mutex
	lat      []time.Duration // ping jobs' enqueue-to-start
	lateness []time.Duration // delayed jobs' start after their due time
}

// hook points the bench tasks' handlers at o; n no-op jobs close finished.
func (o *observations) hook(n int) {
	o.finished = make(chan struct{})
	tasks.OnNoop = func() {
		if o.noops.Add(1) == int64(n) {
			close(o.finished)
		}
	}
	tasks.OnPing = func(sent time.Time) {
		d := time.Since(sent)
		if o.latOn.Load() {
			o.mu.Lock()
			o.lat = append(o.lat, d)
			o.mu.Unlock()
		}
	}
	tasks.OnDelayed = func(due time.Time) {
		d := time.Since(due)
		o.mu.Lock()
		o.lateness = append(o.lateness, d)
		o.mu.Unlock()
	}
}

// enqueueScenario makes n single enqueues from `producers` goroutines and
// reports the memory per pending job.
func enqueueScenario(ctx context.Context, c *runtime.Client) {
	note("enqueue: %d single enqueues from %d goroutines", *n, *producers)
	mem0 := usedMemory(ctx, c.Redis())
	start := time.Now()
	benchkit.Parallel(*producers, *n, func(int) {
		if _, err := tasks.Noop.Enqueue(ctx, payload); err != nil {
			log.Fatal(err)
		}
	})
	report("enqueue_jobs_per_s", float64(*n)/time.Since(start).Seconds())
	report("redis_bytes_per_job", float64(usedMemory(ctx, c.Redis())-mem0)/float64(*n))
}

// drainScenario starts the worker at concurrency `conc` on the n pending
// no-op jobs, waits until it has run them all, and returns the function that
// stops it.
func drainScenario(ctx context.Context, c *runtime.Client, obs *observations) (stop func()) {
	note("drain: %d pending jobs at concurrency %d", *n, *conc)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: *conc, Logger: quiet})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	start := time.Now()
	go func() {
		if err := w.Run(wctx); err != nil {
			log.Fatal(err)
		}
	}()
	<-obs.finished
	report("drain_jobs_per_s", float64(*n)/time.Since(start).Seconds())
	return stop
}

// batchScenario enqueues n jobs in EnqueueMany calls of `batch`, `producers`
// calls at a time, on the now empty queues, and waits until the worker has
// run them.
func batchScenario(ctx context.Context, obs *observations) {
	note("enqueue_batch: %d jobs in EnqueueMany calls of %d", *n, *batch)
	obs.noops.Store(0)
	obs.finished = make(chan struct{})
	start := time.Now()
	var wg sync.WaitGroup
	for off := 0; off < *n; off += *batch * *producers {
		for p := 0; p < *producers && off+p**batch < *n; p++ {
			lo := off + p**batch
			hi := min(lo+*batch, *n)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := tasks.Noop.EnqueueMany(ctx, make([]tasks.Payload, hi-lo)); err != nil {
					log.Fatal(err)
				}
			}()
		}
		wg.Wait()
	}
	report("enqueue_batch_jobs_per_s", float64(*n)/time.Since(start).Seconds())
	benchkit.WaitFor(func() bool { return obs.noops.Load() >= int64(*n) }, 60*time.Second)
}

// latencyScenario measures enqueue-to-start at a fixed rate for `secs`
// seconds.
func latencyScenario(ctx context.Context, obs *observations) {
	note("latency: %d jobs/s for %ds", *rate, *secs)
	obs.latOn.Store(true)
	sent := benchkit.Paced(*rate, time.Duration(*secs)*time.Second, func() {
		if _, err := tasks.Ping.Enqueue(ctx, tasks.Stamp{At: time.Now().UnixNano()}); err != nil {
			log.Print(err)
		}
	})
	benchkit.WaitFor(func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.lat) >= sent }, 10*time.Second)
	obs.mu.Lock()
	report("latency_p50_ms", benchkit.Ms(benchkit.Quantile(obs.lat, 0.50)))
	report("latency_p99_ms", benchkit.Ms(benchkit.Quantile(obs.lat, 0.99)))
	obs.mu.Unlock()
}

// callScenario measures enqueue + await round trips, one after another.
func callScenario(ctx context.Context) {
	note("call: %d sequential Call round trips", *calls)
	rts := make([]time.Duration, 0, *calls)
	for i := 0; i < *calls; i++ {
		t0 := time.Now()
		if _, err := tasks.Echo.Call(ctx, tasks.Stamp{At: int64(i)}); err != nil {
			log.Fatal(err)
		}
		rts = append(rts, time.Since(t0))
	}
	report("call_p50_ms", benchkit.Ms(benchkit.Quantile(rts, 0.50)))
	report("call_p99_ms", benchkit.Ms(benchkit.Quantile(rts, 0.99)))
}

// delayedScenario enqueues jobs due in 1s and measures their lateness: start
// time - due time.
func delayedScenario(ctx context.Context, obs *observations) {
	note("delayed: %d jobs due in 1s", *delayedN)
	for i := 0; i < *delayedN; i++ {
		due := time.Now().Add(time.Second)
		if _, err := tasks.Delayed.Enqueue(ctx, tasks.Stamp{At: due.UnixNano()}, runtime.At(due)); err != nil {
			log.Fatal(err)
		}
	}
	benchkit.WaitFor(func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.lateness) >= *delayedN }, 20*time.Second)
	obs.mu.Lock()
	report("delay_lateness_p50_ms", benchkit.Ms(benchkit.Quantile(obs.lateness, 0.50)))
	report("delay_lateness_p99_ms", benchkit.Ms(benchkit.Quantile(obs.lateness, 0.99)))
	obs.mu.Unlock()
}

func note(format string, args ...any) { fmt.Fprintf(os.Stderr, "# "+format+"\n", args...) }

func report(metric string, v float64) { fmt.Printf("bananas %s=%.3f\n", metric, v) }

// usedMemory is the Redis server's used_memory, 0 when INFO fails.
func usedMemory(ctx context.Context, rdb redis.UniversalClient) int64 {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0
	}
	return benchkit.UsedMemory(info)
}

// cleanup deletes the run's namespace (on every master of a cluster).
func cleanup(ctx context.Context, rdb redis.UniversalClient, ns string) {
	del := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, ns+":*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
			if len(keys) == 1000 {
				c.Unlink(ctx, keys...)
				keys = keys[:0]
			}
		}
		if len(keys) > 0 {
			c.Unlink(ctx, keys...)
		}
		return iter.Err()
	}
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		_ = r.ForEachMaster(ctx, del)
	case *redis.Client:
		_ = del(ctx, r)
	}
}
