package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

// runWorkerChild is the bench re-executed as one worker process of the
// scaling scenario: it drains until SIGTERM.
func runWorkerChild(url, ns string, concurrency int) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: concurrency, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// scaling drains jobs pending jobs with 1, 2 and 4 worker processes at
// concurrency 1, 16, 64 and 256, and prints a table of jobs per second.
func scaling(ctx context.Context, url string, jobs int) {
	if url == "mem://" {
		note("scaling needs a Redis the worker processes can reach: set REDIS_URL")
		return
	}
	fmt.Printf("# scaling: drain of %d pending no-op jobs, jobs/s\n", jobs)
	fmt.Printf("%-10s %10s %10s %10s %10s\n", "processes", "conc 1", "conc 16", "conc 64", "conc 256")
	for _, procs := range []int{1, 2, 4} {
		row := fmt.Sprintf("%-10d", procs)
		for _, conc := range []int{1, 16, 64, 256} {
			n := jobs
			if conc == 1 {
				n = jobs / 5 // one job at a time is slow; keep the cell short
			}
			row += fmt.Sprintf(" %10.0f", drainWith(ctx, url, procs, conc, n))
		}
		fmt.Println(row)
	}
}

func drainWith(ctx context.Context, url string, procs, conc, n int) float64 {
	ns := fmt.Sprintf("s%x", time.Now().UnixNano()%0xfffff)
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	defer cleanup(ctx, c.Redis(), ns)
	for off := 0; off < n; off += 1000 {
		if _, err := tasks.Noop.With(c).EnqueueMany(ctx, make([]tasks.Payload, min(1000, n-off))); err != nil {
			log.Fatal(err)
		}
	}
	start := time.Now()
	var children []*exec.Cmd
	for range procs {
		args := []string{"-role", "worker", "-concurrency", strconv.Itoa(conc)}
		if prof := os.Getenv("BENCH_CHILD_CPUPROFILE"); prof != "" { // profile the (first) worker process
			args = append(args, "-cpuprofile", prof)
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "REDIS_URL="+url, "BENCH_NS="+ns)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		children = append(children, cmd)
	}
	in := runtime.NewInspector(c)
	benchkit.WaitFor(func() bool {
		routes, err := in.Routes(ctx)
		for _, r := range routes {
			if r.Route == "default" {
				return err == nil && r.Pending() == 0 && r.Active == 0
			}
		}
		return false
	}, 120*time.Second)
	elapsed := time.Since(start)
	for _, ch := range children {
		_ = ch.Process.Signal(syscall.SIGTERM)
		_ = ch.Wait()
	}
	return float64(n) / elapsed.Seconds()
}
