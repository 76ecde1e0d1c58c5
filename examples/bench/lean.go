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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var (
	leanMode = flag.Bool("lean", false, "instead of the scenarios: the drain of -n pending no-op jobs whose task keeps its result records (the default) and keeps nothing (result_ttl=0), alternated -lean-runs times each, in a fresh namespace per run; medians")
	leanRuns = flag.Int("lean-runs", 3, "with -lean: runs of each drain")
)

// noopTask is the type of the drained tasks: noop keeps its records,
// noopLean nothing.
type noopTask = *runtime.Task[tasks.Payload, runtime.None]

// leanDrainScenario is the scenarios' lean row, beside BullMQ's
// removeOnComplete: the drain scenario again, n pending jobs of a task that
// keeps nothing once they completed (result_ttl=0).
func leanDrainScenario(ctx context.Context, c *runtime.Client) {
	note("drain_lean: %d pending jobs of a task with result_ttl=0 at concurrency %d", *n, *conc)
	report("drain_lean_jobs_per_s", drainOnce(ctx, c, tasks.NoopLean.With(c)).rate)
}

// leanBench alternates the default drain and the lean one, the order
// reversed every other run, each in a namespace of its own (no run finds
// another's records), and reports the medians: jobs a second, and the CPU
// per job of the Redis server (INFO cpu) and of this process (getrusage),
// which move least on a shared machine.
func leanBench(ctx context.Context, url string) {
	runs := map[bool][]drained{}
	for i := range *leanRuns {
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, isLean := range order {
			ns := fmt.Sprintf("b%x", time.Now().UnixNano()%0xfffff)
			c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
			if err != nil {
				log.Fatal(err)
			}
			task := tasks.Noop.With(c)
			if isLean {
				task = tasks.NoopLean.With(c)
			}
			d := drainOnce(ctx, c, task)
			cleanup(ctx, c.Redis(), ns)
			_ = c.Close()
			runs[isLean] = append(runs[isLean], d)
			note("run %d %s: %.0f jobs/s, Redis %.1f µs/job, client %.1f µs/job",
				i+1, map[bool]string{false: "default", true: "lean"}[isLean], d.rate, d.redisUS, d.clientUS)
		}
	}
	for _, isLean := range []bool{false, true} {
		suffix := map[bool]string{false: "", true: "_lean"}[isLean]
		ds := runs[isLean]
		report("drain"+suffix+"_jobs_per_s", median(ds, func(d drained) float64 { return d.rate }))
		report("drain"+suffix+"_redis_us_per_job", median(ds, func(d drained) float64 { return d.redisUS }))
		report("drain"+suffix+"_client_us_per_job", median(ds, func(d drained) float64 { return d.clientUS }))
	}
}

// drained is what one drain measured: jobs a second, and the CPU
// microseconds per job the Redis server and this process spent on it.
type drained struct{ rate, redisUS, clientUS float64 }

// drainOnce single-enqueues n jobs of task from `producers` goroutines, as
// the enqueue scenario does, then starts a worker at concurrency `conc` and
// measures it from its start to the last job's run. The worker is stopped
// before it returns.
func drainOnce(ctx context.Context, c *runtime.Client, task noopTask) drained {
	benchkit.Parallel(*producers, *n, func(int) {
		if _, err := task.Enqueue(ctx, payload); err != nil {
			log.Fatal(err)
		}
	})
	var ran atomic.Int64
	finished := make(chan struct{})
	tasks.OnNoop = func() {
		if ran.Add(1) == int64(*n) {
			close(finished)
		}
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: *conc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	redis0, client0 := redisCPU(ctx, c), clientCPU()
	start := time.Now()
	go func() { done <- w.Run(wctx) }()
	<-finished
	d := drained{rate: float64(*n) / time.Since(start).Seconds()}
	d.redisUS = (redisCPU(ctx, c) - redis0).Seconds() * 1e6 / float64(*n)
	d.clientUS = (clientCPU() - client0).Seconds() * 1e6 / float64(*n)
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	return d
}

// redisCPU is the CPU time, user and system, c's Redis server has used
// (INFO cpu); 0 when it does not say (the embedded server).
func redisCPU(ctx context.Context, c *runtime.Client) time.Duration {
	info, err := c.Redis().Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var t time.Duration
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			secs, _ := strconv.ParseFloat(v, 64)
			t += time.Duration(secs * float64(time.Second))
		}
	}
	return t
}

// clientCPU is the CPU time, user and system, this process has used.
func clientCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median is the median of f over ds.
func median(ds []drained, f func(drained) float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = f(d)
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
