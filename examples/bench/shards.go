package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var shardCount = flag.Int("shards", 0, "instead of the scenarios, on a cluster (REDIS_URL=redis+cluster://...): enqueue and drain -n jobs "+
	"on one route unsharded, then spread over this many shards, and report each master's share of the commands")

// shardBalance measures how a route's work falls over a cluster's masters:
// one route (the bench tasks' default) unsharded, then over -shards shards,
// each time -n single enqueues drained by one worker, with every master's
// commands read from INFO commandstats around the run.
func shardBalance(ctx context.Context, c *runtime.Client) {
	cc, ok := c.Redis().(*redis.ClusterClient)
	if !ok {
		log.Fatal("-shards needs a Redis Cluster: REDIS_URL=redis+cluster://host:port,...")
	}
	in := runtime.NewInspector(c)
	for _, shards := range []int{1, *shardCount} {
		if err := in.SetShards(ctx, "default", shards); err != nil {
			log.Fatal(err)
		}
		note("shards: %d jobs on route default over %d shard(s)", *n, shards)
		before := masterCommands(ctx, cc)
		start := time.Now()
		shardRun(ctx, c, *n)
		elapsed := time.Since(start)
		after := masterCommands(ctx, cc)
		shares := commandShares(before, after)
		prefix := "shard_balance"
		if shards == 1 {
			prefix = "shard_balance_unsharded"
		}
		for i, s := range shares {
			note("%d shard(s): master %d ran %.1f%% of the commands", shards, i, 100*s)
		}
		report(prefix+"_max_share", slices.Max(shares))
		report(prefix+"_min_share", slices.Min(shares))
		report(prefix+"_jobs_per_s", float64(*n)/elapsed.Seconds())
	}
}

// shardRun enqueues jobs from the producers and drains them with one worker.
func shardRun(ctx context.Context, c *runtime.Client, jobs int) {
	obs := &observations{}
	obs.hook(jobs)
	start := time.Now()
	benchkit.Parallel(*producers, jobs, func(int) {
		if _, err := tasks.Noop.Enqueue(ctx, payload); err != nil {
			log.Fatal(err)
		}
	})
	note("enqueued in %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	defer func() { note("drained in %s", time.Since(start).Round(time.Millisecond)) }()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: *conc, Logger: quiet})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(wctx); err != nil {
			log.Fatal(err)
		}
	}()
	<-obs.finished
	stop()
	<-done
}

// masterCommands reads each master's commands so far (every command but
// the cluster's own and INFO), by address.
func masterCommands(ctx context.Context, cc *redis.ClusterClient) map[string]int64 {
	var mu sync.Mutex
	out := map[string]int64{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		var sum int64
		for _, line := range strings.Split(info, "\r\n") {
			name, rest, ok := strings.Cut(line, ":")
			if !ok || !strings.HasPrefix(name, "cmdstat_") || strings.HasPrefix(name, "cmdstat_cluster") || name == "cmdstat_info" {
				continue
			}
			calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
			k, _ := strconv.ParseInt(calls, 10, 64)
			sum += k
		}
		mu.Lock()
		out[m.Options().Addr] = sum
		mu.Unlock()
		return nil
	})
	if err != nil {
		log.Fatal(fmt.Errorf("-shards: INFO commandstats: %w", err))
	}
	return out
}

// commandShares is each master's share of the commands run between two
// readings, masters in address order.
func commandShares(before, after map[string]int64) []float64 {
	addrs := make([]string, 0, len(after))
	for a := range after {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	var total int64
	for _, a := range addrs {
		total += after[a] - before[a]
	}
	out := make([]float64, len(addrs))
	for i, a := range addrs {
		out[i] = float64(after[a]-before[a]) / float64(max(total, 1))
	}
	return out
}
