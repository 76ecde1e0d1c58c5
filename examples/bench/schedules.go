package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

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

// schedRoutes is how many routes the bench's schedules spread over.
const schedRoutes = 8

// schedulesBench puts schedN schedules that all tick every second (a
// six-field spec, overlap allow), spread over schedRoutes routes, runs one
// scheduler over them for schedSecs — the schedules' runner and the
// delayed-job promoter, woken through the schedule channel, as a scheduler
// process runs them — and reports the ticks made ready a second, their
// lateness and the Redis CPU spent a second (0 on the embedded server).
//
// A tick's lateness is when its job was taken from its ready list (by a
// consumer that pops the lists as fast as they fill: an upper bound of when
// the job became ready) minus the tick. An allow schedule's job is written
// ahead of its tick (scheduler.Ahead) and made ready at it by the runner, so
// this is that release's lateness plus the pop's round trip.
func schedulesBench(ctx context.Context, c *runtime.Client, ns string) {
	q, err := queue.New(c.Redis(), ns)
	if err != nil {
		log.Fatal(err)
	}
	if err := q.SyncClock(ctx); err != nil {
		log.Fatal(err)
	}
	s := &scheduler.Schedules{Queue: q}
	env, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
	if err != nil {
		log.Fatal(err)
	}
	routes := make([]string, schedRoutes)
	lists := make([]string, schedRoutes)
	for i := range routes {
		routes[i] = "sched" + strconv.Itoa(i)
		lists[i] = q.Keys(routes[i]).List(queue.Normal)
	}
	note("putting %d schedules", *schedN)
	benchkit.Parallel(16, *schedN, func(i int) {
		d := scheduler.ScheduleDef{ID: fmt.Sprintf("s%06d", i), Name: "bench.tick", Route: routes[i%schedRoutes],
			Envelope: env, Spec: "* * * * * *", Overlap: bananastype.OverlapAllow}
		if _, err := s.Put(ctx, d, q.Now()); err != nil {
			log.Fatal(err)
		}
	})
	note("lateness: a tick's job taken from its ready list minus the tick (the job is written up to %v ahead and made ready at the tick)", scheduler.Ahead)

	var mu sync.Mutex
	ticks := map[string]time.Time{} // job id -> its tick
	var late, written []time.Duration
	r := &scheduler.ScheduleRunner{Schedules: s, OnFire: func(_ scheduler.Schedule, tick time.Time, id string) {
		mu.Lock()
		ticks[id] = tick
		written = append(written, q.Now().Sub(tick))
		mu.Unlock()
	}, OnError: func(id string, err error) { note("schedule %s: %v", id, err) }}
	wake := make(chan time.Time, 1)
	p := &scheduler.Promoter{Queue: q, Routes: func(context.Context) ([]string, error) { return routes, nil }, Wake: wake,
		OnError: func(err error) { note("promoter: %v", err) }}
	run, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	sub := c.Redis().Subscribe(run, queue.ScheduleChannel(ns))
	defer sub.Close()
	for _, loop := range []func(){
		func() { r.Run(run) },
		func() { p.Run(run) },
		func() {
			for m := range sub.Channel() {
				if ms, err := strconv.ParseInt(m.Payload, 10, 64); err == nil {
					scheduler.OfferWake(wake, time.UnixMilli(ms))
				}
			}
		},
		func() { consumeTicks(run, c.Redis(), q, lists, &mu, ticks, &late) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); loop() }()
	}
	info := func() string { v, _ := c.Redis().Info(ctx, "cpu").Result(); return v }
	// The first seconds warm up (the schedules were put over them); the
	// figures are of the seconds after.
	time.Sleep(2500 * time.Millisecond)
	mu.Lock()
	late = late[:0]
	written = written[:0]
	mu.Unlock()
	cpu0 := benchkit.RedisCPU(info())
	t0 := time.Now()
	time.Sleep(time.Duration(*schedSecs) * time.Second)
	mu.Lock()
	got := slices.Clone(late)
	wr := slices.Clone(written)
	mu.Unlock()
	slices.Sort(wr)
	// Where lateness comes from: a tick written late (the runner behind)
	// or promoted late (the promoter, or Redis, behind).
	note("a tick's job written, minus the tick (negative: ahead of it): p50 %v, p99 %v",
		benchkit.Quantile(wr, 0.5).Round(time.Millisecond), benchkit.Quantile(wr, 0.99).Round(time.Millisecond))
	secs := time.Since(t0).Seconds()
	cpu := benchkit.RedisCPU(info()) - cpu0
	stop()
	_ = sub.Close()
	wg.Wait()
	slices.Sort(got)
	report(fmt.Sprintf("schedules_%d_ticks_per_s", *schedN), float64(len(got))/secs)
	report(fmt.Sprintf("schedules_%d_tick_lateness_p50_ms", *schedN), benchkit.Ms(benchkit.Quantile(got, 0.5)))
	report(fmt.Sprintf("schedules_%d_tick_lateness_p99_ms", *schedN), benchkit.Ms(benchkit.Quantile(got, 0.99)))
	report(fmt.Sprintf("schedules_%d_redis_cpu_s_per_s", *schedN), cpu.Seconds()/secs)
}

// consumeTicks takes the tick jobs from the ready lists until ctx ends,
// adding each one's lateness (taken minus its tick) to late: up to 1,000 a
// list in one pipelined round trip, and, when all were empty, a blocking
// pop on all of them (one job) instead of a polling sleep.
func consumeTicks(ctx context.Context, rdb redis.UniversalClient, q *queue.Queue, lists []string, mu *sync.Mutex, ticks map[string]time.Time, late *[]time.Duration) {
	took := func(ids []string) {
		now := q.Now()
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if tick, ok := ticks[id]; ok {
				*late = append(*late, now.Sub(tick))
				delete(ticks, id)
			}
		}
	}
	for ctx.Err() == nil {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(lists))
		for i, l := range lists {
			cmds[i] = pipe.LPopCount(ctx, l, 1000)
		}
		_, _ = pipe.Exec(ctx)
		n := 0
		for _, c := range cmds {
			took(c.Val())
			n += len(c.Val())
		}
		if n > 0 {
			continue
		}
		if kv, err := rdb.BLPop(ctx, time.Second, lists...).Result(); err == nil && len(kv) == 2 {
			took(kv[1:])
		}
	}
}
