package main

import (
	"context"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/benchkit"
)

// observations is what the handlers record for the scenarios measured on the
// job's side.
type observations struct {
	n        int64
	noops    atomic.Int64
	finished chan struct{} // closed when noops reaches n
	mu       sync.Mutex
	lat      []time.Duration // ping jobs' enqueue-to-start
	lateness []time.Duration // delayed jobs' start after their due time
}

func newObservations(n int) *observations {
	return &observations{n: int64(n), finished: make(chan struct{})}
}

// mux routes the three task types of the scenarios to o.
func (o *observations) mux() *asynq.ServeMux {
	m := asynq.NewServeMux()
	m.HandleFunc("noop", func(context.Context, *asynq.Task) error {
		if o.noops.Add(1) == o.n {
			close(o.finished)
		}
		return nil
	})
	m.HandleFunc("ping", func(_ context.Context, t *asynq.Task) error {
		d := time.Since(stamp(t))
		o.mu.Lock()
		o.lat = append(o.lat, d)
		o.mu.Unlock()
		return nil
	})
	m.HandleFunc("delayed", func(_ context.Context, t *asynq.Task) error {
		d := time.Since(stamp(t))
		o.mu.Lock()
		o.lateness = append(o.lateness, d)
		o.mu.Unlock()
		return nil
	})
	return m
}

func (o *observations) count(of *[]time.Duration) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(*of)
}

// enqueueScenario makes n single enqueues from `producers` goroutines with no
// server running, and reports Redis memory per pending job.
func enqueueScenario(ctx context.Context, rc *redis.Client, client *asynq.Client) {
	note("enqueue: %d single enqueues from %d goroutines", *n, *producers)
	mem0 := usedMemory(ctx, rc)
	start := time.Now()
	benchkit.Parallel(*producers, *n, func(int) {
		if _, err := client.Enqueue(asynq.NewTask("noop", payload)); err != nil {
			log.Fatal(err)
		}
	})
	report("enqueue_jobs_per_s", float64(*n)/time.Since(start).Seconds())
	report("redis_bytes_per_job", float64(usedMemory(ctx, rc)-mem0)/float64(*n))
}

// drainScenario starts the server on the n pending no-op jobs and waits until
// all have started; the server keeps running for the later scenarios.
func drainScenario(srv *asynq.Server, obs *observations) {
	note("drain: %d pending jobs at concurrency %d", *n, *conc)
	start := time.Now()
	if err := srv.Start(obs.mux()); err != nil {
		log.Fatal(err)
	}
	<-obs.finished
	report("drain_jobs_per_s", float64(*n)/time.Since(start).Seconds())
}

// latencyScenario measures enqueue-to-start at a fixed rate for `secs` seconds.
func latencyScenario(client *asynq.Client, obs *observations) {
	note("latency: %d jobs/s for %ds", *rate, *secs)
	var failed atomic.Int64
	sent := benchkit.Paced(*rate, time.Duration(*secs)*time.Second, func() {
		if _, err := client.Enqueue(asynq.NewTask("ping", unixNano(time.Now()))); err != nil {
			failed.Add(1)
		}
	})
	if !benchkit.WaitFor(func() bool { return obs.count(&obs.lat)+int(failed.Load()) >= sent }, 60*time.Second) {
		note("latency: only %d of %d jobs started within 60s", obs.count(&obs.lat), sent)
	}
	if f := failed.Load(); f > 0 {
		note("latency: %d enqueues failed", f)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	report("latency_p50_ms", benchkit.Ms(benchkit.Quantile(obs.lat, 0.50)))
	report("latency_p99_ms", benchkit.Ms(benchkit.Quantile(obs.lat, 0.99)))
}

// delayedScenario enqueues jobs due in 1s and measures start time - due time.
func delayedScenario(client *asynq.Client, obs *observations) {
	note("delayed: %d jobs due in 1s", *delayedN)
	for range *delayedN {
		due := time.Now().Add(time.Second)
		if _, err := client.Enqueue(asynq.NewTask("delayed", unixNano(due)), asynq.ProcessAt(due)); err != nil {
			log.Fatal(err)
		}
	}
	if !benchkit.WaitFor(func() bool { return obs.count(&obs.lateness) >= *delayedN }, 30*time.Second) {
		note("delayed: only %d of %d jobs started within 30s", obs.count(&obs.lateness), *delayedN)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	report("delay_lateness_p50_ms", benchkit.Ms(benchkit.Quantile(obs.lateness, 0.50)))
	report("delay_lateness_p99_ms", benchkit.Ms(benchkit.Quantile(obs.lateness, 0.99)))
}

func unixNano(t time.Time) []byte { return strconv.AppendInt(nil, t.UnixNano(), 10) }

func stamp(t *asynq.Task) time.Time {
	v, err := strconv.ParseInt(string(t.Payload()), 10, 64)
	if err != nil {
		log.Fatalf("task %s: payload %q is not a time stamp", t.Type(), t.Payload())
	}
	return time.Unix(0, v)
}
