package scheduler_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// A paused cron entry of the code fires nothing on any scheduler (two run
// here) and keeps its tick; resumed, it fires again, once per tick. An
// entry beside it, never paused, is the clock: its ticks show the
// schedulers ran while the other was paused.
func TestCron_APausedEntryFiresNothingOnAnySchedulerAndKeepsItsTick(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		env, _ := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
		entry := func(name string) scheduler.CronEntry {
			return scheduler.CronEntry{Name: name, Route: "r" + name, Priority: queue.Normal, Spec: "@every 1s",
				Job: func(tick time.Time) (queue.NewJob, error) {
					return queue.NewJob{ID: scheduler.TickJobID(name, "r"+name, tick), Name: name, Envelope: env}, nil
				}}
		}
		var mu sync.Mutex
		fired := map[string]int{}
		ticks := map[string]map[int64]int{"p": {}, "clock": {}}
		var wg sync.WaitGroup
		run, stop := context.WithCancel(ctx)
		for range 2 {
			c := &scheduler.Cron{Queue: q, Entries: []scheduler.CronEntry{entry("p"), entry("clock")},
				OnFire: func(e scheduler.CronEntry, tick time.Time, _ string) {
					mu.Lock()
					fired[e.Name]++
					ticks[e.Name][tick.UnixMilli()]++
					mu.Unlock()
				}}
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.Run(run) }()
		}
		defer func() { stop(); wg.Wait() }()
		count := func(name string) int { mu.Lock(); defer mu.Unlock(); return fired[name] }
		waitUntil(t, ctx, "p fired", func() bool { return count("p") >= 1 })
		if err := scheduler.PauseCron(ctx, q, "rp", "p", true, q.Now()); err != nil {
			t.Fatal(err)
		}
		paused, err := scheduler.CronPaused(ctx, q, []scheduler.CronRef{{Name: "p", Route: "rp"}, {Name: "clock", Route: "rclock"}})
		if err != nil || !paused[0] || paused[1] {
			t.Fatalf("paused = %v, %v; want p paused, clock not", paused, err)
		}
		tick, _ := q.Client().HGet(ctx, q.Keys("rp").Cron("p"), "tick").Result()
		n, clock := count("p"), count("clock")
		waitUntil(t, ctx, "three ticks of the clock", func() bool { return count("clock") >= clock+3 })
		if got := count("p"); got != n {
			t.Fatalf("a paused entry fired %d ticks", got-n)
		}
		if after, _ := q.Client().HGet(ctx, q.Keys("rp").Cron("p"), "tick").Result(); after != tick {
			t.Fatalf("the paused entry's tick moved from %s to %s", tick, after)
		}
		jobs, _ := q.Client().LLen(ctx, q.Keys("rp").List(queue.Normal)).Result()
		if err := scheduler.PauseCron(ctx, q, "rp", "p", false, q.Now()); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, ctx, "p fires again", func() bool { return count("p") >= n+2 })
		stop()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for name, byTick := range ticks {
			for at, k := range byTick {
				if k != 1 {
					t.Fatalf("%s: tick %d fired %d times", name, at, k)
				}
			}
		}
		if got, _ := q.Client().LLen(ctx, q.Keys("rp").List(queue.Normal)).Result(); got != jobs+int64(fired["p"]-n) {
			t.Fatalf("%d jobs after the resume for %d fires", got-jobs, fired["p"]-n)
		}
	})
}

// Pausing a cron entry whose state key is not a hash is an error naming
// it, and writes nothing; pausing twice is pausing once.
func TestCron_PauseOfGarbageStateIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Client().Set(ctx, q.Keys("r").Cron("g"), "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := scheduler.PauseCron(ctx, q, "r", "g", true, q.Now()); err == nil {
			t.Fatal("pausing over a string state key succeeded")
		}
		if v, _ := q.Client().Get(ctx, q.Keys("r").Cron("g")).Result(); v != "x" {
			t.Fatalf("the garbage was written: %q", v)
		}
		if paused, err := scheduler.CronPaused(ctx, q, []scheduler.CronRef{{Name: "g", Route: "r"}}); err != nil || paused[0] {
			t.Fatalf("garbage state reads as paused %v, %v", paused, err)
		}
	})
}
