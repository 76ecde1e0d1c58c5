package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var idleCounts = flag.String("idle", "", "instead of the scenarios: for each comma-separated count N of extra workers (such as 0,100), "+
	"one busy worker and N more on the same route, each with its own client: Redis CPU and commands per job and the p99 "+
	"enqueue-to-start at -rate jobs/s for -secs, then each worker's Redis CPU and commands per second with no jobs")

// idleRig is one count's workers and the Redis counters read around a phase.
type idleRig struct {
	url, ns string
	rdb     redis.UniversalClient // the measuring client, for INFO
	obs     *observations
	stops   []func()
}

// idleWorkers measures what extra workers cost Redis, for each count:
// under load (a busy route at -rate jobs/s) and at rest (no jobs at all).
func idleWorkers(ctx context.Context, c *runtime.Client, url, ns string) {
	if strings.HasPrefix(url, "mem://") {
		log.Fatal("-idle needs REDIS_URL: every worker has its own client, which mem:// would give its own server")
	}
	for _, field := range strings.Split(*idleCounts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 0 {
			log.Fatalf("-idle %q: want counts such as 0,100", *idleCounts)
		}
		rig := &idleRig{url: url, ns: ns, rdb: c.Redis(), obs: &observations{}}
		rig.obs.hook(0)
		rig.measure(ctx, c, n)
		rig.stop()
	}
}

func (r *idleRig) measure(ctx context.Context, c *runtime.Client, extra int) {
	// Redis's own work at rest (its timers, expiry): taken off what the
	// workers are charged with.
	const rest = 3 * time.Second
	before := r.counters(ctx)
	time.Sleep(rest)
	baseline := r.counters(ctx).minus(before).per(rest)
	r.start(ctx, 8) // the busy worker
	for range extra {
		r.start(ctx, 1)
	}
	// Every worker's connections are open once it has beaten (its
	// heartbeat, pub/sub and fetch connections are dialed at start).
	benchkit.WaitFor(func() bool { ws, err := c.Workers(ctx); return err == nil && len(ws) == extra+1 }, 30*time.Second)
	time.Sleep(200 * time.Millisecond)
	conns := r.counters(ctx).clients - before.clients
	note("idle: 1 busy worker and %d more, %d jobs/s for %ds", extra, *rate, *secs)
	r.obs.latOn.Store(true)
	at := r.counters(ctx)
	sent := benchkit.Paced(*rate, time.Duration(*secs)*time.Second, func() {
		if _, err := tasks.Ping.With(c).Enqueue(ctx, tasks.Stamp{At: time.Now().UnixNano()}); err != nil {
			log.Print(err)
		}
	})
	benchkit.WaitFor(func() bool { r.obs.mu.Lock(); defer r.obs.mu.Unlock(); return len(r.obs.lat) >= sent }, 30*time.Second)
	load := r.counters(ctx).minus(at)
	r.obs.mu.Lock()
	p99 := benchkit.Quantile(r.obs.lat, 0.99)
	r.obs.mu.Unlock()
	time.Sleep(time.Second) // let the last wake-ups and acks settle before the quiet phase
	// An idle worker calls Redis every few seconds (its safety poll and
	// its keeper lock every 30 s, its heartbeat every 15 s): the quiet
	// phase spans one of each, or two.
	const quietFor = 30 * time.Second
	at = r.counters(ctx)
	time.Sleep(quietFor)
	quiet := r.counters(ctx).minus(at).per(quietFor).minus(baseline)
	workers := float64(extra + 1)
	prefix := fmt.Sprintf("idle%d_", extra)
	report(prefix+"redis_us_per_job", load.cpuUS/float64(sent))
	report(prefix+"commands_per_job", load.commands/float64(sent))
	report(prefix+"p99_ms", benchkit.Ms(p99))
	report(prefix+"redis_us_per_worker_s", quiet.cpuUS/workers)
	report(prefix+"commands_per_worker_s", quiet.commands/workers)
	report(prefix+"connections_per_worker", float64(conns)/workers)
}

// start runs one worker of the bench tasks on its own client.
func (r *idleRig) start(ctx context.Context, concurrency int) {
	c, err := runtime.Connect(ctx, r.url, runtime.WithNamespace(r.ns))
	if err != nil {
		log.Fatal(err)
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: concurrency, Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, cancel := context.WithCancel(ctx)
	var done sync.WaitGroup
	done.Add(1)
	go func() {
		defer done.Done()
		if err := w.Run(wctx); err != nil {
			log.Print(err)
		}
	}()
	r.stops = append(r.stops, func() { cancel(); done.Wait(); c.Close() })
}

func (r *idleRig) stop() {
	var wg sync.WaitGroup
	for _, s := range r.stops {
		wg.Add(1)
		go func() { defer wg.Done(); s() }()
	}
	wg.Wait()
}

// redisCounters are Redis's own counters: CPU (user and system, µs),
// commands processed and clients connected. The commands of a phase
// include the INFO that reads them: one per reading, noise next to the
// workers'.
type redisCounters struct {
	cpuUS, commands float64
	clients         int
}

// per turns counts over d into counts per second (clients are left as
// they are: a level, not a count).
func (a redisCounters) per(d time.Duration) redisCounters {
	return redisCounters{cpuUS: a.cpuUS / d.Seconds(), commands: a.commands / d.Seconds(), clients: a.clients}
}

func (a redisCounters) minus(b redisCounters) redisCounters {
	return redisCounters{cpuUS: a.cpuUS - b.cpuUS, commands: a.commands - b.commands, clients: a.clients - b.clients}
}

func (r *idleRig) counters(ctx context.Context) redisCounters {
	info, err := r.rdb.Info(ctx, "cpu", "stats", "clients").Result()
	if err != nil {
		log.Fatal(err)
	}
	var out redisCounters
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "used_cpu_user", "used_cpu_sys":
			out.cpuUS += f * 1e6
		case "total_commands_processed":
			out.commands = f
		case "connected_clients":
			out.clients = int(f)
		}
	}
	return out
}
