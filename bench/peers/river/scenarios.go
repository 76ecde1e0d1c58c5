package main

import (
	"context"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bananas-go/bananas/internal/benchkit"
)

// NoopArgs encodes to the project's bench payload as JSON, about 90 bytes.
type NoopArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

func (NoopArgs) Kind() string { return "noop" }

var noop = NoopArgs{To: "user@example.com", Subject: "hello", Body: "0123456789012345678901234567890123456789"}

// StampArgs carries a time (UnixNano): a ping's enqueue, a delayed job's due time.
type StampArgs struct {
	At      int64 `json:"at"`
	Delayed bool  `json:"delayed,omitempty"`
}

func (StampArgs) Kind() string { return "stamp" }

// observations is what the workers record for the scenarios measured on the
// job's side.
type observations struct {
	n        atomic.Int64
	noops    atomic.Int64
	finished chan struct{} // closed when noops reaches n
	mu       sync.Mutex
	lat      []time.Duration // pings' enqueue-to-start
	lateness []time.Duration // delayed jobs' start after their due time
}

func newObservations(n int) *observations {
	o := &observations{finished: make(chan struct{})}
	o.n.Store(int64(n))
	return o
}

// reset counts no-op jobs afresh up to n.
func (o *observations) reset(n int) {
	o.noops.Store(0)
	o.finished = make(chan struct{})
	o.n.Store(int64(n))
}

func (o *observations) workers() *river.Workers {
	ws := river.NewWorkers()
	river.AddWorker(ws, river.WorkFunc(func(context.Context, *river.Job[NoopArgs]) error {
		if o.noops.Add(1) == o.n.Load() {
			close(o.finished)
		}
		return nil
	}))
	river.AddWorker(ws, river.WorkFunc(func(_ context.Context, j *river.Job[StampArgs]) error {
		d := time.Since(time.Unix(0, j.Args.At))
		o.mu.Lock()
		if j.Args.Delayed {
			o.lateness = append(o.lateness, d)
		} else {
			o.lat = append(o.lat, d)
		}
		o.mu.Unlock()
		return nil
	}))
	return ws
}

func (o *observations) count(of *[]time.Duration) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(*of)
}

// enqueueScenario makes n single inserts from `producers` goroutines with the
// client not yet working, and reports river_job's growth per pending job.
func enqueueScenario(ctx context.Context, client *river.Client[pgx.Tx], st *store) {
	note("enqueue: %d single inserts from %d goroutines", *n, *producers)
	size0 := st.bytes()
	start := time.Now()
	benchkit.Parallel(*producers, *n, func(int) {
		if _, err := client.Insert(ctx, noop, nil); err != nil {
			log.Fatal(err)
		}
	})
	report("enqueue_jobs_per_s", float64(*n)/time.Since(start).Seconds())
	report("pg_bytes_per_job", float64(st.bytes()-size0)/float64(*n))
}

// drainScenario starts the client on the n pending jobs and waits until all
// have started; the client keeps working for the later scenarios.
func drainScenario(ctx context.Context, client *river.Client[pgx.Tx], obs *observations) {
	note("drain: %d pending jobs, MaxWorkers %d", *n, *workers)
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-obs.finished
	report("drain_jobs_per_s", float64(*n)/time.Since(start).Seconds())
}

// batchScenario inserts n jobs in InsertMany calls of `batch`, `producers`
// calls at a time, while the client works, as the project's bench does with
// EnqueueMany, then waits until they have run.
func batchScenario(ctx context.Context, client *river.Client[pgx.Tx], obs *observations) {
	note("enqueue_batch: %d jobs in InsertMany calls of %d", *n, *batch)
	obs.reset(*n)
	calls := (*n + *batch - 1) / *batch
	start := time.Now()
	benchkit.Parallel(*producers, calls, func(i int) {
		params := make([]river.InsertManyParams, min(*batch, *n-i**batch))
		for j := range params {
			params[j] = river.InsertManyParams{Args: noop}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			log.Fatal(err)
		}
	})
	report("enqueue_batch_jobs_per_s", float64(*n)/time.Since(start).Seconds())
	select {
	case <-obs.finished:
	case <-time.After(5 * time.Minute):
		note("enqueue_batch: only %d of %d jobs ran within 5m", obs.noops.Load(), *n)
	}
}

// latencyScenario measures enqueue-to-start at a fixed rate for `secs` seconds.
func latencyScenario(ctx context.Context, client *river.Client[pgx.Tx], obs *observations) {
	note("latency: %d jobs/s for %ds", *rate, *secs)
	var failed atomic.Int64
	sent := benchkit.Paced(*rate, time.Duration(*secs)*time.Second, func() {
		if _, err := client.Insert(ctx, StampArgs{At: time.Now().UnixNano()}, nil); err != nil {
			failed.Add(1)
		}
	})
	if !benchkit.WaitFor(func() bool { return obs.count(&obs.lat)+int(failed.Load()) >= sent }, 60*time.Second) {
		note("latency: only %d of %d jobs started within 60s", obs.count(&obs.lat), sent)
	}
	if f := failed.Load(); f > 0 {
		note("latency: %d inserts failed", f)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	report("latency_p50_ms", benchkit.Ms(benchkit.Quantile(obs.lat, 0.50)))
	report("latency_p99_ms", benchkit.Ms(benchkit.Quantile(obs.lat, 0.99)))
}

// delayedScenario inserts jobs due in 1s and measures start time - due time.
func delayedScenario(ctx context.Context, client *river.Client[pgx.Tx], obs *observations) {
	note("delayed: %d jobs due in 1s", *delayedN)
	for range *delayedN {
		due := time.Now().Add(time.Second)
		if _, err := client.Insert(ctx, StampArgs{At: due.UnixNano(), Delayed: true}, &river.InsertOpts{ScheduledAt: due}); err != nil {
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
