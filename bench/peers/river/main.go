// Command river measures riverqueue/river (pgx v5 driver) on PostgreSQL with
// the default scenarios and metric names of the project's
// `go run ./examples/bench`, so that scripts/bench-compare.sh can set them
// side by side:
//
//	go run . -dsn postgres://postgres@127.0.0.1:5439/postgres          # River's defaults
//	go run . -dsn postgres://postgres@127.0.0.1:5439/postgres -fast    # its fastest fetching
//
// Every result line on stdout is `river <metric>=<value>` (`river-fast` with
// -fast); notes and River's warnings go to stderr. pg_bytes_per_job (growth of
// river_job with its indexes, per pending job) stands in for
// redis_bytes_per_job; enqueue_batch_jobs_per_s is InsertMany. River has no
// enqueue-and-await-result call, so call_* is not printed.
//
// The schema -schema is dropped and recreated with River's migrations, so use
// a throwaway server. Between scenarios the harness waits until River has
// marked every job completed and truncates river_job, so each scenario starts
// on an empty table (River itself keeps completed jobs for a day).
//
// River's defaults are FetchCooldown 100 ms and FetchPollInterval 1 s; -fast
// sets both to River's documented minimum, 1 ms. Due scheduled jobs are made
// available by the leader's scheduler, which runs every 5 s and has no
// setting, so -fast does not change the delayed scenario's lateness much.
//
// This module is separate from the library's so that River, pgx's pool and
// their dependencies never enter the library's go.mod.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

var (
	dsn       = flag.String("dsn", "", "PostgreSQL URL of a throwaway server (required); -schema is dropped and recreated")
	schema    = flag.String("schema", "river_bench", "schema River's tables are migrated into")
	n         = flag.Int("n", 50000, "jobs for the enqueue and drain scenarios")
	producers = flag.Int("producers", 16, "producer goroutines for the enqueue scenarios")
	batch     = flag.Int("batch", 1000, "jobs per InsertMany call")
	workers   = flag.Int("concurrency", 64, "MaxWorkers of the default queue")
	rate      = flag.Int("rate", 1000, "jobs per second in the latency scenario")
	secs      = flag.Int("secs", 5, "seconds of the latency scenario")
	delayedN  = flag.Int("delayed", 200, "jobs in the delayed-lateness scenario")
	fast      = flag.Bool("fast", false, "FetchCooldown and FetchPollInterval at River's minimum (1ms); results tagged river-fast")
	cooldown  = flag.Duration("fetch-cooldown", 0, "FetchCooldown (0: River's default, 100ms)")
	poll      = flag.Duration("fetch-poll-interval", 0, "FetchPollInterval (0: River's default, 1s)")
)

var tag = "river"

func main() {
	flag.Parse()
	if *dsn == "" {
		log.Fatal("river: -dsn is required")
	}
	if *fast {
		tag = "river-fast"
		*cooldown, *poll = river.FetchCooldownMin, river.FetchPollIntervalMin
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(*dsn)
	if err != nil {
		log.Fatal(err)
	}
	// pgxpool's default, max(4, NumCPU) connections, would throttle the
	// producers; the asynq harness gives go-redis two per producer.
	cfg.MaxConns = int32(*producers*2 + 8)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	st := newStore(ctx, pool, *schema)
	obs := newObservations(*n)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     *cooldown,
		FetchPollInterval: *poll,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *workers}},
		Schema:            *schema,
		Workers:           obs.workers(),
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		log.Fatal(err)
	}
	note("FetchCooldown=%s FetchPollInterval=%s MaxWorkers=%d n=%d producers=%d batch=%d",
		cmp.Or(*cooldown, river.FetchCooldownDefault), cmp.Or(*poll, river.FetchPollIntervalDefault),
		*workers, *n, *producers, *batch)

	cpuPerJob("enqueue", *n, func() { enqueueScenario(ctx, client, st) })
	cpuPerJob("drain", *n, func() { drainScenario(ctx, client, obs) })
	st.settleAndTruncate()
	cpuPerJob("batch", *n, func() { batchScenario(ctx, client, obs) })
	st.settleAndTruncate()
	cpuPerJob("latency", *rate**secs, func() { latencyScenario(ctx, client, obs) })
	st.settleAndTruncate()
	note("call: not measured, River has no enqueue-and-await-result call")
	delayedScenario(ctx, client, obs)
	stop(ctx, client)
}

func stop(ctx context.Context, client *river.Client[pgx.Tx]) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(ctx); err != nil {
		note("stop: %v", err)
	}
}

func note(format string, args ...any) { fmt.Fprintf(os.Stderr, "# "+tag+": "+format+"\n", args...) }

func report(metric string, v float64) { fmt.Printf("%s %s=%.3f\n", tag, metric, v) }
