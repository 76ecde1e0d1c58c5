package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/scheduler"
)

var (
	schedN    = flag.Int("schedules", 0, "instead of the scenarios: this many schedules ticking every second on one scheduler: ticks/s, tick lateness p50/p99, Redis CPU per second")
	schedSecs = flag.Int("schedule-secs", 5, "with -schedules: seconds the scheduler runs")
)

// schedulesBench puts schedN schedules that all tick every second (a
// six-field spec), spread over 8 routes, runs one scheduler over them for
// schedSecs, and reports the ticks enqueued a second, their lateness (the
// tick to its job enqueued) and the Redis CPU spent a second (0 on the
// embedded server).
func schedulesBench(ctx context.Context, c *runtime.Client, ns string) {
	q, err := queue.New(c.Redis(), ns)
	if err != nil {
		log.Fatal(err)
	}
	s := &scheduler.Schedules{Queue: q}
	env, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
	if err != nil {
		log.Fatal(err)
	}
	note("putting %d schedules", *schedN)
	benchkit.Parallel(16, *schedN, func(i int) {
		d := scheduler.ScheduleDef{ID: fmt.Sprintf("s%06d", i), Name: "bench.tick", Route: fmt.Sprintf("sched%d", i%8),
			Envelope: env, Spec: "* * * * * *", Overlap: bananastype.OverlapAllow}
		if _, err := s.Put(ctx, d, q.Now()); err != nil {
			log.Fatal(err)
		}
	})
	var mu sync.Mutex
	var late []time.Duration
	r := &scheduler.ScheduleRunner{Schedules: s, OnFire: func(_ scheduler.Schedule, tick time.Time, _ string) {
		d := q.Now().Sub(tick)
		mu.Lock()
		late = append(late, d)
		mu.Unlock()
	}}
	info := func() string { v, _ := c.Redis().Info(ctx, "cpu").Result(); return v }
	// The first second warms up (the schedules were put over it); the
	// figures are of the seconds after.
	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(run) }()
	time.Sleep(1500 * time.Millisecond)
	mu.Lock()
	late = late[:0]
	mu.Unlock()
	cpu0 := benchkit.RedisCPU(info())
	t0 := time.Now()
	time.Sleep(time.Duration(*schedSecs) * time.Second)
	mu.Lock()
	got := slices.Clone(late)
	mu.Unlock()
	secs := time.Since(t0).Seconds()
	cpu := benchkit.RedisCPU(info()) - cpu0
	stop()
	<-done
	slices.Sort(got)
	report(fmt.Sprintf("schedules_%d_ticks_per_s", *schedN), float64(len(got))/secs)
	report(fmt.Sprintf("schedules_%d_tick_lateness_p50_ms", *schedN), benchkit.Ms(benchkit.Quantile(got, 0.5)))
	report(fmt.Sprintf("schedules_%d_tick_lateness_p99_ms", *schedN), benchkit.Ms(benchkit.Quantile(got, 0.99)))
	report(fmt.Sprintf("schedules_%d_redis_cpu_s_per_s", *schedN), cpu.Seconds()/secs)
}
