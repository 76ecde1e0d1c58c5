// Command addons is the part of the load generator that measures the
// add-ons, each a module of its own: -tracing the cost of otelbananas,
// -history the task history in PostgreSQL (history/postgres). It is a module
// of its own too, so that the core module, and examples/bench in it, require
// neither OpenTelemetry nor a PostgreSQL driver. Its tasks, flags and output
// are those of examples/bench:
//
//	go -C examples/bench/addons run . -tracing -runs 9                        # part of make bench
//	HISTORY_URL=postgres://… go -C examples/bench/addons run . -history   # scripts/bench-history.sh
//
// Result lines go to stdout as `bananas <metric>=<value>`; progress, prefixed
// with #, to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/runtime"
)

var (
	n        = flag.Int("n", 50000, "jobs of each drain")
	conc     = flag.Int("concurrency", 64, "worker concurrency")
	secs     = flag.Int("secs", 5, "with -history: seconds of the lag scenario")
	batch    = flag.Int("batch", 1000, "jobs per EnqueueMany call")
	flowRuns = flag.Int("runs", 3, "with -tracing: rounds, each drain once a round; the figures are their medians")
)

var payload = tasks.Payload{To: "user@example.com", Subject: "hello", Body: "0123456789012345678901234567890123456789"}

func main() {
	flag.Parse()
	if *tracingMode == *historyMode {
		fmt.Fprintln(os.Stderr, "addons: give one of -tracing and -history")
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "mem://"
		note("REDIS_URL not set: measuring the embedded server (mem://)")
	}
	ns := fmt.Sprintf("b%x", time.Now().UnixNano()%0xfffff)
	if *historyMode {
		historyBench(ctx, url, ns)
		return
	}
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	defer cleanup(ctx, c.Redis(), ns)
	tracingBench(ctx, c, url, ns)
}

// noopsRun points the no-op task's handler at a fresh count and returns a
// channel closed once n no-op jobs have run.
func noopsRun(n int) <-chan struct{} {
	var ran atomic.Int64
	finished := make(chan struct{})
	tasks.OnNoop = func() {
		if ran.Add(1) == int64(n) {
			close(finished)
		}
	}
	return finished
}

func note(format string, args ...any) { fmt.Fprintf(os.Stderr, "# "+format+"\n", args...) }

func report(metric string, v float64) { fmt.Printf("bananas %s=%.3f\n", metric, v) }

// reportRuns reports each run of a figure and their median.
func reportRuns(metric string, runs []float64) {
	for i, v := range runs {
		report(fmt.Sprintf("%s_run%d", metric, i+1), v)
	}
	report(metric, median(runs))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
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
