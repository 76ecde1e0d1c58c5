package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/runtime"
	"github.com/redis/go-redis/v9"
)

func counters(ctx context.Context, r *redis.Client) (cpu, cmds float64) {
	info := r.Info(ctx, "cpu", "stats").Val()
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "used_cpu_user", "used_cpu_sys":
			cpu += f * 1e6
		case "total_commands_processed":
			cmds = f
		}
	}
	return
}

func main() {
	ctx := context.Background()
	m := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6390"})
	c0, k0 := counters(ctx, m)
	time.Sleep(10 * time.Second)
	c1, k1 := counters(ctx, m)
	fmt.Printf("base %.0f us/s %.1f cmd/s\n", (c1-c0)/10, (k1-k0)/10)
	const n = 1000
	for range n {
		c, err := runtime.Connect(ctx, "redis://127.0.0.1:6390", runtime.WithNamespace("idl"))
		if err != nil {
			panic(err)
		}
		w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 1, Logger: slog.New(slog.DiscardHandler)})
		tasks.Register(w)
		go w.Run(ctx)
	}
	time.Sleep(15 * time.Second)
	m.ConfigResetStat(ctx)
	a, b := counters(ctx, m)
	time.Sleep(20 * time.Second)
	c, d := counters(ctx, m)
	fmt.Printf("%d workers: %.0f us/s total, %.1f us/s/worker over base, %.2f cmd/s/worker\n", n, (c-a)/20, ((c-a)/20-(c1-c0)/10)/n, (d-b)/20/n)
	fmt.Println(m.Info(ctx, "commandstats").Val())
	fmt.Println(m.Info(ctx, "clients").Val())
}
