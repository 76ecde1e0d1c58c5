// Command asynq measures hibiken/asynq with the default scenarios and metric
// names of the project's `go run ./examples/bench`, so that
// scripts/bench-compare.sh can set the two side by side on one redis-server:
//
//	go run . -addr 127.0.0.1:6390          # asynq's defaults
//	go run . -addr 127.0.0.1:6390 -fast    # polling fast (below)
//
// Every result line on stdout is `asynq <metric>=<value>` (`asynq-fast` with
// -fast); notes go to stderr. It flushes the Redis database it is given, since
// asynq's keys have no namespace of their own: point it at a throwaway server.
//
// asynq polls: an idle processor sleeps about TaskCheckInterval (default 1 s)
// between dequeues, and the forwarder moves due scheduled tasks to pending every
// DelayedTaskCheckInterval (default 5 s). Its documentation sets no lower bound
// and warns that low values load Redis; -fast sets both to 10 ms. asynq has no
// batch enqueue and no enqueue-and-await-result call, so enqueue_batch_* and
// call_* are not printed (a note on stderr says so).
//
// This module is separate from the library's so that asynq and its
// dependencies never enter the library's go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

var (
	addr         = flag.String("addr", "127.0.0.1:6379", "redis address of a throwaway server (its database is flushed)")
	db           = flag.Int("db", 0, "redis database")
	n            = flag.Int("n", 50000, "jobs for the enqueue and drain scenarios")
	producers    = flag.Int("producers", 16, "producer goroutines for the enqueue scenario")
	conc         = flag.Int("concurrency", 64, "worker concurrency")
	rate         = flag.Int("rate", 1000, "jobs per second in the latency scenario")
	secs         = flag.Int("secs", 5, "seconds of the latency scenario")
	delayedN     = flag.Int("delayed", 200, "jobs in the delayed-lateness scenario")
	fast         = flag.Bool("fast", false, "TaskCheckInterval and DelayedTaskCheckInterval at 10ms; results tagged asynq-fast")
	check        = flag.Duration("check", 0, "TaskCheckInterval (0: asynq's default, 1s; -fast: 10ms)")
	uniqueMode   = flag.Bool("unique", false, "instead of the scenarios: single enqueues with asynq.Unique against plain ones (the project's -unique)")
	delayedCheck = flag.Duration("delayed-check", 0, "DelayedTaskCheckInterval (0: asynq's default, 5s; -fast: 10ms)")
)

// payload is the project's bench payload (to, subject, body) as JSON, about 90 bytes.
var payload = []byte(`{"to":"user@example.com","subject":"hello","body":"0123456789012345678901234567890123456789"}`)

var tag = "asynq"

func main() {
	flag.Parse()
	if *fast {
		tag = "asynq-fast"
		if *check == 0 {
			*check = 10 * time.Millisecond
		}
		if *delayedCheck == 0 {
			*delayedCheck = 10 * time.Millisecond
		}
	}
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: *addr, DB: *db})
	defer rc.Close()
	if err := rc.FlushDB(ctx).Err(); err != nil {
		log.Fatal(err)
	}
	conn := asynq.RedisClientOpt{Addr: *addr, DB: *db, PoolSize: *producers * 2}
	client := asynq.NewClient(conn)
	defer client.Close()
	note("TaskCheckInterval=%s DelayedTaskCheckInterval=%s concurrency=%d n=%d producers=%d",
		orDefault(*check, "1s"), orDefault(*delayedCheck, "5s"), *conc, *n, *producers)

	if *uniqueMode {
		uniqueScenario(ctx, rc, client)
		return
	}
	cpu := cpuPerJob(ctx, rc)
	cpu("enqueue", *n, func() { enqueueScenario(ctx, rc, client) })
	obs := newObservations(*n)
	srv := asynq.NewServer(conn, asynq.Config{
		Concurrency:              *conc,
		TaskCheckInterval:        *check,
		DelayedTaskCheckInterval: *delayedCheck,
		LogLevel:                 asynq.ErrorLevel,
	})
	cpu("drain", *n, func() { drainScenario(srv, obs) })
	note("enqueue_batch: not measured, asynq has no batch enqueue")
	cpu("latency", *rate**secs, func() { latencyScenario(client, obs) })
	note("call: not measured, asynq has no enqueue-and-await-result call")
	delayedScenario(client, obs)
	srv.Shutdown()
}

func orDefault(d time.Duration, def string) string {
	if d == 0 {
		return def
	}
	return d.String()
}

func note(format string, args ...any) { fmt.Fprintf(os.Stderr, "# "+tag+": "+format+"\n", args...) }

func report(metric string, v float64) { fmt.Printf("%s %s=%.3f\n", tag, metric, v) }
