package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/history"
	_ "github.com/bananas-go/bananas/history/postgres" // postgres:// for history.Open
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

var (
	historyMode = flag.Bool("history", false, "with HISTORY_URL set: the drain with the task history on against off, the history's lag at -history-rate jobs/s, and searches over -history-rows rows")
	historyRate = flag.Int("history-rate", 5000, "with -history: jobs per second of the lag scenario")
	historyRows = flag.Int("history-rows", 1000000, "with -history: rows the searches run over")
)

// historyBench measures the task history against a PostgreSQL at
// HISTORY_URL (scripts/bench-history.sh starts a throwaway one).
func historyBench(ctx context.Context, url, ns string) {
	hurl := os.Getenv("HISTORY_URL")
	if hurl == "" {
		log.Fatal("-history needs HISTORY_URL (scripts/bench-history.sh starts a throwaway PostgreSQL)")
	}
	store, err := history.Open(ctx, hurl)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.(history.Migrator).Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	lagged := &lagStore{Store: store}
	off, on := connectBench(ctx, url, ns+"off", nil), connectBench(ctx, url, ns+"on", lagged)
	defer off.Close()
	defer on.Close()
	var offRates, onRates, storedRates []float64
	for range 3 {
		r, _ := drainOnce(ctx, off, *n)
		offRates = append(offRates, r)
		r, stored := drainOnce(ctx, on, *n)
		onRates, storedRates = append(onRates, r), append(storedRates, stored)
	}
	report("history_off_drain_jobs_per_s", median(offRates))
	report("history_on_drain_jobs_per_s", median(onRates))
	report("history_on_vs_off", median(onRates)/median(offRates))
	report("history_on_stored_jobs_per_s", median(storedRates))
	historyLag(ctx, on, lagged)
	historySearches(ctx, store)
}

func connectBench(ctx context.Context, url, ns string, store history.Store) *runtime.Client {
	opts := []runtime.ConnectOption{runtime.WithNamespace(ns)}
	if store != nil {
		opts = append(opts, runtime.WithHistory(store))
	}
	c, err := runtime.Connect(ctx, url, opts...)
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// drainOnce enqueues jobs no-op jobs on c, runs a worker until every one has
// run, and returns the jobs per second of that drain; with a history, it
// keeps the worker until every end is stored, and returns the jobs per
// second from the start to then too (stored; else 0).
func drainOnce(ctx context.Context, c *runtime.Client, jobs int) (drained, stored float64) {
	batchOf := make([]tasks.Payload, *batch)
	for i := 0; i < jobs; i += len(batchOf) {
		if _, err := tasks.Noop.With(c).EnqueueMany(ctx, batchOf[:min(len(batchOf), jobs-i)]); err != nil {
			log.Fatal(err)
		}
	}
	finished := noopsRun(jobs)
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: *conc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	<-finished
	drained = float64(jobs) / time.Since(start).Seconds()
	if c.History() != nil {
		ended := c.Namespace() + ":route:{default}:ended"
		benchkit.WaitFor(func() bool { l, err := c.Redis().LLen(ctx, ended).Result(); return err == nil && l == 0 }, 5*time.Minute)
		stored = float64(jobs) / time.Since(start).Seconds()
	}
	stop()
	<-done
	return drained, stored
}

// lagStore records, for every row it writes, how long after the job's end
// the row was committed.
type lagStore struct {
	history.Store
	on   atomic.Bool
	mu   sync.Mutex
	lags []time.Duration
}

func (s *lagStore) Write(ctx context.Context, rows []bananastype.Job) error {
	if err := s.Store.Write(ctx, rows); err != nil {
		return err
	}
	if s.on.Load() {
		now := time.Now()
		s.mu.Lock()
		for _, r := range rows {
			s.lags = append(s.lags, now.Sub(r.FinishedAt))
		}
		s.mu.Unlock()
	}
	return nil
}

// historyLag runs jobs at historyRate a second for secs and reports the p99
// of job end → row committed.
func historyLag(ctx context.Context, c *runtime.Client, s *lagStore) {
	note("history lag: %d jobs/s for %ds", *historyRate, *secs)
	tasks.OnNoop = func() {} // the store times each row; the jobs count nothing
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: *conc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = w.Run(wctx) }()
	s.on.Store(true)
	sent := benchkit.Paced(*historyRate, time.Duration(*secs)*time.Second, func() {
		if _, err := tasks.Noop.With(c).Enqueue(ctx, tasks.Payload{}); err != nil {
			log.Print(err)
		}
	})
	benchkit.WaitFor(func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.lags) >= sent }, 60*time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	report("history_lag_p50_ms", benchkit.Ms(benchkit.Quantile(s.lags, 0.5)))
	report("history_lag_p99_ms", benchkit.Ms(benchkit.Quantile(s.lags, 0.99)))
}

// historySearches fills the history to historyRows rows and times a search
// by error text and one by an args field, medians of three.
func historySearches(ctx context.Context, store history.Store) {
	note("history search: filling %d rows", *historyRows)
	now := time.Now().UTC()
	const chunk = 5000
	for i := 0; i < *historyRows; i += chunk {
		rows := make([]bananastype.Job, 0, chunk)
		for j := i; j < min(i+chunk, *historyRows); j++ {
			args, _ := json.Marshal(map[string]any{"customer": map[string]any{"id": j % 100000}, "invoice": "inv-" + strconv.Itoa(j)})
			r := bananastype.Job{
				ID: fmt.Sprintf("bench~%012d", j), Attempts: 1, Name: "task_" + strconv.Itoa(j%20), Route: "default", Priority: "normal",
				Status: queue.StatusCompleted, Args: args, CreatedAt: now, StartedAt: now,
				FinishedAt: now.Add(-time.Duration(j%(7*24*3600)) * time.Second), Worker: "bench",
			}
			if j%50 == 0 {
				r.Status, r.Error = queue.StatusFailed, "card declined: issuer "+strconv.Itoa(j%997)+" refused"
			}
			rows = append(rows, r)
		}
		if err := store.Write(ctx, rows); err != nil {
			log.Fatal(err)
		}
	}
	// Right after a million writes the GIN indexes hold them in pending
	// lists and the partitions have no statistics, until autovacuum comes
	// (within a minute or so): timed once as is, then after what it does.
	fresh := func(q history.Query) float64 {
		start := time.Now()
		if _, err := store.Search(ctx, q); err != nil {
			log.Fatal(err)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	report("history_search_error_text_unvacuumed_ms", fresh(history.Query{Text: "issuer 421 refused"}))
	report("history_search_args_field_unvacuumed_ms", fresh(history.Query{Args: map[string]string{"customer.id": "4243"}}))
	if v, ok := store.(interface{ Vacuum(context.Context) error }); ok {
		if err := v.Vacuum(ctx); err != nil {
			log.Fatal(err)
		}
	}
	timeIt := func(q history.Query) float64 {
		var d []float64
		for range 3 {
			start := time.Now()
			if _, err := store.Search(ctx, q); err != nil {
				log.Fatal(err)
			}
			d = append(d, float64(time.Since(start).Microseconds())/1000)
		}
		return median(d)
	}
	report("history_search_error_text_ms", timeIt(history.Query{Text: "issuer 421 refused"}))
	report("history_search_args_field_ms", timeIt(history.Query{Args: map[string]string{"customer.id": "4242"}}))
	report("history_search_task_status_ms", timeIt(history.Query{Task: "task_10", Status: queue.StatusFailed}))
}
