package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// def is a schedule of task "t" on route r every second.
func def(t *testing.T, id, route string) scheduler.ScheduleDef {
	t.Helper()
	env, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
	if err != nil {
		t.Fatal(err)
	}
	return scheduler.ScheduleDef{ID: id, Name: "t", Route: route, Envelope: env, Spec: "@every 1s", Overlap: bananastype.OverlapAllow}
}

// runRunner runs r until the returned stop is called (or the test ends).
func runRunner(t *testing.T, r *scheduler.ScheduleRunner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// readyIDs are the tick jobs on route: those ready, then those written
// ahead of their tick (an allow schedule's, scheduled to run at the tick),
// by tick.
func readyIDs(t *testing.T, q *queue.Queue, route string) []string {
	t.Helper()
	ids, err := q.Client().LRange(context.Background(), q.Keys(route).List(queue.Normal), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := q.Client().ZRange(context.Background(), q.Keys(route).Scheduled(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return append(ids, ahead...)
}

func get(t *testing.T, s *scheduler.Schedules, id string) scheduler.Schedule {
	t.Helper()
	sc, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// checkOnePerTick fails unless the jobs on route are the jobs of distinct,
// consecutive ticks of schedule sc, one each, and as many as it fired.
func checkOnePerTick(t *testing.T, q *queue.Queue, s *scheduler.Schedules, id, route string) []string {
	t.Helper()
	ids := readyIDs(t, q, route)
	slices.Sort(ids) // by tick: a tick job's id is a ULID of its tick
	sc := get(t, s, id)
	if int64(len(ids)) != sc.Fired {
		t.Fatalf("%d jobs on route %s for %d fired ticks: %v", len(ids), route, sc.Fired, ids)
	}
	seen := map[string]bool{}
	tick := time.Time{}
	for _, j := range ids {
		if seen[j] {
			t.Fatalf("job %s enqueued twice: %v", j, ids)
		}
		seen[j] = true
		st, err := q.Jobs.Lookup(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		// A tick's job id is derived from the schedule and the tick: find
		// the tick by trying the ones after the previous.
		found := false
		for k := 0; k < 120 && !found; k++ {
			c := tick.Add(time.Duration(k) * time.Second)
			if tick.IsZero() {
				c = st.CreatedAt.Truncate(time.Second).Add(time.Duration(k-60) * time.Second)
			}
			if scheduler.TickJobID(id, route, c) == j {
				if !c.After(tick) {
					t.Fatalf("job %s is of tick %v, not after the previous job's tick %v", j, c, tick)
				}
				tick, found = c, true
			}
		}
		if !found {
			t.Fatalf("job %s is of no tick of schedule %s", j, id)
		}
	}
	return ids
}

// Three runners race on one schedule every second: each tick's job is
// enqueued once.
func TestSchedules_ThreeRunnersEnqueueOneJobPerTick(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		s := &scheduler.Schedules{Queue: q}
		if _, err := s.Put(ctx, def(t, "race", "r"), q.Now()); err != nil {
			t.Fatal(err)
		}
		var fired atomic.Int64
		var stops []func()
		for range 3 {
			stops = append(stops, runRunner(t, &scheduler.ScheduleRunner{Schedules: s, Safety: 50 * time.Millisecond,
				OnFire:  func(scheduler.Schedule, time.Time, string) { fired.Add(1) },
				OnError: func(id string, err error) { t.Errorf("schedule %s: %v", id, err) }}))
		}
		waitUntil(t, ctx, "three ticks fired", func() bool { return get(t, s, "race").Fired >= 3 })
		for _, stop := range stops {
			stop()
		}
		ids := checkOnePerTick(t, q, s, "race", "r")
		if fired.Load() != int64(len(ids)) {
			t.Fatalf("runners told of %d fires, %d jobs enqueued", fired.Load(), len(ids))
		}
	})
}

// A runner killed between its claim and the enqueue leaves the claim; any
// other finishes it, and finishing it twice (two runners at once) is one job.
func TestSchedules_AClaimLeftByAKilledRunnerIsFinishedOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		s := &scheduler.Schedules{Queue: q}
		sc, err := s.Put(ctx, def(t, "left", "r"), q.Now())
		if err != nil {
			t.Fatal(err)
		}
		job := scheduler.TickJobID("left", "r", sc.Next)
		// A claim as a runner leaves it when killed right after it.
		if err := q.Client().HSet(ctx, s.Key("left"), "pend_tick", sc.Next.UnixMilli(), "pend_job", job,
			"next", sc.Next.Add(time.Hour).UnixMilli()).Err(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &scheduler.ScheduleRunner{Schedules: s}
				if err := r.Step(ctx, "left"); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if ids := readyIDs(t, q, "r"); len(ids) != 1 || ids[0] != job {
			t.Fatalf("ready jobs %v; want the claimed tick's job %s once", ids, job)
		}
		if got := get(t, s, "left"); got.Pending != "" || got.LastJob != job || got.Fired != 1 {
			t.Fatalf("after the claim was finished: pending %q, last job %q, fired %d", got.Pending, got.LastJob, got.Fired)
		}
		// The job ran and left nothing (a task that keeps no record), and a
		// runner that claimed the tick again is finished: the route's mark
		// of the tick, not the job's record, keeps it one job.
		if err := q.Client().Del(ctx, q.Keys("r").List(queue.Normal), q.Keys("r").Scheduled(), q.Keys("r").Job(job)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := q.Client().HSet(ctx, s.Key("left"), "pend_tick", sc.Next.UnixMilli(), "pend_job", job).Err(); err != nil {
			t.Fatal(err)
		}
		if err := (&scheduler.ScheduleRunner{Schedules: s}).Step(ctx, "left"); err != nil {
			t.Fatal(err)
		}
		if ids := readyIDs(t, q, "r"); len(ids) != 0 {
			t.Fatalf("the tick's job was enqueued again after it ran and left nothing: %v", ids)
		}
	})
}

// N processes put the same schedule at once, each with its own idea of
// now: one schedule results, with one next tick.
func TestSchedules_ConcurrentPutsLeaveOneSchedule(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		s := &scheduler.Schedules{Queue: q}
		now := q.Now()
		const n = 16
		nexts := make([]time.Time, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sc, err := s.Put(ctx, def(t, "same", "r"), now.Add(time.Duration(i)*700*time.Millisecond))
				if err != nil {
					t.Error(err)
					return
				}
				nexts[i] = sc.Next
			}()
		}
		wg.Wait()
		final := get(t, s, "same")
		for i, nx := range nexts {
			if !nx.Equal(final.Next) {
				t.Fatalf("put %d answered next tick %v, the schedule has %v", i, nx, final.Next)
			}
		}
		if list, err := s.List(ctx); err != nil || len(list) != 1 {
			t.Fatalf("List = %d schedules, %v; want one", len(list), err)
		}
		// A put that changes the plan takes its own next tick.
		d := def(t, "same", "r")
		d.Spec = "@every 2s"
		sc, err := s.Put(ctx, d, now.Add(time.Hour))
		if err != nil || !sc.Next.After(now.Add(time.Hour)) {
			t.Fatalf("a put with a new spec: next %v, %v; want past the put's now", sc.Next, err)
		}
	})
}

// A paused schedule fires nothing and keeps its next tick; resumed, it
// fires that tick.
func TestSchedules_APausedScheduleFiresNothingAndKeepsItsNextTick(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s := &scheduler.Schedules{Queue: q}
		sc, err := s.Put(ctx, def(t, "p", "r"), q.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Pause(ctx, "p", true, q.Now()); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, ctx, "the next tick passed", func() bool { return q.Now().After(sc.Next.Add(100 * time.Millisecond)) })
		r := &scheduler.ScheduleRunner{Schedules: s}
		if err := r.Step(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		if got := get(t, s, "p"); got.Fired != 0 || !got.Next.Equal(sc.Next) || len(readyIDs(t, q, "r")) != 0 {
			t.Fatalf("paused: fired %d, next %v (was %v), ready %v", got.Fired, got.Next, sc.Next, readyIDs(t, q, "r"))
		}
		if err := s.Pause(ctx, "p", false, q.Now()); err != nil {
			t.Fatal(err)
		}
		if err := r.Step(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		if ids := readyIDs(t, q, "r"); len(ids) != 1 || ids[0] != scheduler.TickJobID("p", "r", sc.Next) {
			t.Fatalf("resumed: ready %v; want the job of the kept tick %v", ids, sc.Next)
		}
	})
}

// A deleted schedule fires nothing more, and leaves the index.
func TestSchedules_ADeletedScheduleFiresNothingMore(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s := &scheduler.Schedules{Queue: q}
		sc, err := s.Put(ctx, def(t, "d", "r"), q.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "d"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "d"); !errors.Is(err, scheduler.ErrNoSchedule) {
			t.Fatalf("second delete: %v; want ErrNoSchedule", err)
		}
		waitUntil(t, ctx, "the next tick passed", func() bool { return q.Now().After(sc.Next.Add(100 * time.Millisecond)) })
		r := &scheduler.ScheduleRunner{Schedules: s}
		if _, err := r.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.Step(ctx, "d"); err != nil {
			t.Fatal(err)
		}
		if ids := readyIDs(t, q, "r"); len(ids) != 0 {
			t.Fatalf("a deleted schedule fired %v", ids)
		}
		if n, _ := q.Client().ZCard(ctx, s.IndexKey(scheduler.BucketOf("d"))).Result(); n != 0 {
			t.Fatalf("index holds %d schedules after the delete", n)
		}
	})
}

// Overlap skip: no tick's job starts while the last one is unfinished; the
// skips are counted, and the tick after the last job finished fires.
// Overlap allow enqueues every tick.
func TestSchedules_SkipNeverStartsATickWhileTheLastIsUnfinished(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		s := &scheduler.Schedules{Queue: q}
		skip := def(t, "skip", "rs")
		skip.Overlap = bananastype.OverlapSkip
		allow := def(t, "allow", "ra")
		for _, d := range []scheduler.ScheduleDef{skip, allow} {
			if _, err := s.Put(ctx, d, q.Now()); err != nil {
				t.Fatal(err)
			}
		}
		var skipped atomic.Int64
		stop := runRunner(t, &scheduler.ScheduleRunner{Schedules: s, Safety: 50 * time.Millisecond,
			OnSkip:  func(sc scheduler.Schedule, _ time.Time) { skipped.Add(1) },
			OnError: func(id string, err error) { t.Errorf("schedule %s: %v", id, err) }})
		waitUntil(t, ctx, "two ticks skipped", func() bool { return get(t, s, "skip").Skipped >= 2 })
		if ids := readyIDs(t, q, "rs"); len(ids) != 1 {
			t.Fatalf("skip: %d jobs enqueued while the first was unfinished: %v", len(ids), ids)
		}
		waitUntil(t, ctx, "allow fired three ticks", func() bool { return get(t, s, "allow").Fired >= 3 })
		first := readyIDs(t, q, "rs")[0]
		if _, err := q.Jobs.Cancel(ctx, first, []byte("canceled"), time.Minute); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, ctx, "the tick after the last job ended fired", func() bool { return get(t, s, "skip").Fired == 2 })
		stop()
		if got := get(t, s, "skip"); got.Skipped != skipped.Load() {
			t.Fatalf("record counts %d skips, OnSkip was told of %d", got.Skipped, skipped.Load())
		}
		checkOnePerTick(t, q, s, "allow", "ra")
	})
}

// Every script of a schedule's life, run twice with the same arguments (a
// resend after a lost reply), changes nothing the first run did not.
func TestSchedules_EveryScriptIsHarmlessRunTwice(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ns := redistest.Namespace(t)
		hook := redistest.HookSecondRun(t, rdb, ns)
		q, err := queue.New(rdb, ns)
		if err != nil {
			t.Fatal(err)
		}
		s := &scheduler.Schedules{Queue: q}
		r := &scheduler.ScheduleRunner{Schedules: s}
		var sc scheduler.Schedule
		hook.During(func() {
			if sc, err = s.Put(ctx, def(t, "twice", "r"), q.Now()); err != nil {
				t.Fatal(err)
			}
		})
		waitUntil(t, ctx, "the next tick passed", func() bool { return q.Now().After(sc.Next.Add(50 * time.Millisecond)) })
		hook.During(func() { // claim, fire, done
			if err := r.Step(ctx, "twice"); err != nil {
				t.Fatal(err)
			}
		})
		if got := get(t, s, "twice"); got.Fired != 1 {
			t.Fatalf("fired %d after one step", got.Fired)
		}
		hook.During(func() {
			if err := s.Pause(ctx, "twice", true, q.Now()); err != nil {
				t.Fatal(err)
			}
			if err := s.Pause(ctx, "twice", false, q.Now()); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "twice"); err != nil {
				t.Fatal(err)
			}
			if err := scheduler.PauseCron(ctx, q, "r", "cron", true, q.Now()); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// Garbage in Redis is a clear error, and nothing is written.
func TestSchedules_GarbageIsAClearErrorAndNothingIsWritten(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		s := &scheduler.Schedules{Queue: q}
		rdb := q.Client()
		if err := rdb.HSet(ctx, s.Key("g"), "next", "soon", "name", "x").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, def(t, "g", "r"), q.Now()); err == nil || !strings.Contains(err.Error(), "garbage") {
			t.Fatalf("put over a garbage record: %v; want an error saying garbage", err)
		}
		for _, err := range []error{s.Pause(ctx, "g", true, q.Now()), s.Delete(ctx, "g")} {
			if err == nil || !strings.Contains(err.Error(), "garbage") {
				t.Fatalf("an action on a garbage record: %v; want an error saying garbage", err)
			}
		}
		if m, _ := rdb.HGetAll(ctx, s.Key("g")).Result(); len(m) != 2 || m["next"] != "soon" {
			t.Fatalf("the garbage record was written: %v", m)
		}
		if n, _ := rdb.ZCard(ctx, s.IndexKey(scheduler.BucketOf("g"))).Result(); n != 0 {
			t.Fatalf("a put refused for garbage left %d index entries", n)
		}
		if err := rdb.Set(ctx, s.Key("h"), "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, def(t, "h", "r"), q.Now()); err == nil || !strings.Contains(err.Error(), "not a hash") {
			t.Fatalf("put over a string: %v; want an error saying not a hash", err)
		}
		// A garbage tick mark in the route stops the enqueue with an error
		// that names the schedule; nothing is enqueued.
		sc, err := s.Put(ctx, def(t, "m", "r"), q.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, q.Keys("r").ScheduleTick("m"), "junk", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, s.Key("m"), "pend_tick", sc.Next.UnixMilli(), "pend_job", scheduler.TickJobID("m", "r", sc.Next)).Err(); err != nil {
			t.Fatal(err)
		}
		err = (&scheduler.ScheduleRunner{Schedules: s}).Step(ctx, "m")
		if err == nil || !strings.Contains(err.Error(), "schedule m") || !strings.Contains(err.Error(), "garbage") {
			t.Fatalf("fire over a garbage tick mark: %v; want an error naming the schedule and the garbage", err)
		}
		if ids := readyIDs(t, q, "r"); len(ids) != 0 {
			t.Fatalf("enqueued %v over a garbage tick mark", ids)
		}
	})
}

// Bad definitions are refused before anything is written.
func TestSchedules_BadDefinitionsAreRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		s := &scheduler.Schedules{Queue: q}
		for name, edit := range map[string]func(*scheduler.ScheduleDef){
			"schedule id": func(d *scheduler.ScheduleDef) { d.ID = "has space" },
			"cron spec":   func(d *scheduler.ScheduleDef) { d.Spec = "every minute" },
			"time zone":   func(d *scheduler.ScheduleDef) { d.TZ = "Mars/Olympus" },
			"overlap":     func(d *scheduler.ScheduleDef) { d.Overlap = "queue_all" },
			"route":       func(d *scheduler.ScheduleDef) { d.Route = "a b" },
			"end":         func(d *scheduler.ScheduleDef) { d.Start, d.End = time.Unix(100, 0), time.Unix(50, 0) },
		} {
			d := def(t, "bad", "r")
			edit(&d)
			if _, err := s.Put(context.Background(), d, q.Now()); err == nil || !strings.Contains(err.Error(), strings.Fields(name)[0]) {
				t.Errorf("%s: %v; want an error naming it", name, err)
			}
		}
		if n, _ := q.Client().Exists(context.Background(), s.Key("bad"), s.IndexKey(scheduler.BucketOf("bad"))).Result(); n != 0 {
			t.Fatal("a refused put wrote")
		}
	})
}

// On a cluster, schedules spread over the masters (each hash-tagged by its
// own id), and each fires once per tick.
func TestSchedules_SpreadOverAClustersMastersAndFireOncePerTick(t *testing.T) {
	cl := redistest.SharedCluster(t)
	rdb := cl.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	s := &scheduler.Schedules{Queue: q}
	masters := map[string]bool{}
	const n = 12
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		if _, err := s.Put(ctx, def(t, id, "r"+id), q.Now()); err != nil {
			t.Fatal(err)
		}
		node, err := rdb.MasterForKey(ctx, s.Key(id))
		if err != nil {
			t.Fatal(err)
		}
		masters[node.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("%d schedules all on %d master(s); want them spread", n, len(masters))
	}
	var stops []func()
	for range 2 {
		stops = append(stops, runRunner(t, &scheduler.ScheduleRunner{Schedules: s, Safety: 50 * time.Millisecond,
			OnError: func(id string, err error) { t.Errorf("schedule %s: %v", id, err) }}))
	}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		waitUntil(t, ctx, id+" fired twice", func() bool { return get(t, s, id).Fired >= 2 })
	}
	for _, stop := range stops {
		stop()
	}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		checkOnePerTick(t, q, s, id, "r"+id)
	}
}

// After an outage (no scheduler ran), only the missed ticks inside the
// catch-up window run, once each, oldest first; without a window, none of
// the missed ticks runs, only those to come.
func TestSchedules_AfterAnOutageOnlyTicksInsideCatchUpRunOnceOldestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		s := &scheduler.Schedules{Queue: q}
		window := 20 * time.Second
		for _, c := range []struct {
			id      string
			catchUp time.Duration
		}{{"caught", window}, {"none", 0}} {
			d := def(t, c.id, "r"+c.id)
			d.CatchUp = c.catchUp
			if _, err := s.Put(ctx, d, q.Now()); err != nil {
				t.Fatal(err)
			}
			// The outage: the schedule's next tick is a minute old.
			missed := q.Now().Add(-time.Minute).Truncate(time.Second)
			if err := q.Client().HSet(ctx, s.Key(c.id), "next", missed.UnixMilli()).Err(); err != nil {
				t.Fatal(err)
			}
			r := &scheduler.ScheduleRunner{Schedules: s}
			start := q.Now()
			for range 2 { // a second runner after the first finds nothing more to do
				if err := r.Step(ctx, c.id); err != nil {
					t.Fatal(err)
				}
			}
			now := q.Now()
			ids := readyIDs(t, q, "r"+c.id)
			var ticks []time.Time
			for k := 0; k <= 61; k++ {
				tick := missed.Add(time.Duration(k) * time.Second)
				if tick.After(now.Add(scheduler.Ahead)) { // claimed ahead: scheduled to run at its tick
					break
				}
				for _, j := range ids {
					if j == scheduler.TickJobID(c.id, "r"+c.id, tick) {
						ticks = append(ticks, tick)
					}
				}
			}
			if len(ticks) != len(ids) {
				t.Fatalf("%s: %d jobs, %d of them of a missed tick: %v", c.id, len(ids), len(ticks), ids)
			}
			if c.catchUp == 0 {
				// The tick due when the runner woke, and any that fell due
				// while it ran (a slow machine), but none of the missed ones.
				for _, tick := range ticks {
					if start.Sub(tick) > scheduler.Late {
						t.Fatalf("no catch-up: tick %v ran after a minute's outage; want only those due from now on", tick)
					}
				}
				continue
			}
			if len(ids) < 19 || len(ids) > 22 {
				t.Fatalf("catch-up %v: %d ticks ran; want the ~21 inside the window", window, len(ids))
			}
			for i, tick := range ticks {
				if now.Sub(tick) > window+time.Second {
					t.Fatalf("tick %v, %v old, ran: outside the catch-up window", tick, now.Sub(tick))
				}
				if i > 0 && !tick.Equal(ticks[i-1].Add(time.Second)) {
					t.Fatalf("ticks %v ran out of order or with a gap", ticks)
				}
			}
			// The job order in the ready list is the ticks' order.
			for i, j := range ids {
				if j != scheduler.TickJobID(c.id, "r"+c.id, ticks[i]) {
					t.Fatalf("job %d is not of the %d-th oldest tick", i, i)
				}
			}
		}
	})
}

// Overlap buffer_one: while the last tick's job waits to start, a tick
// enqueues nothing; at most one job waits.
func TestSchedules_BufferOneKeepsAtMostOneWaiting(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s := &scheduler.Schedules{Queue: q}
		d := def(t, "buf", "rb")
		d.Overlap = bananastype.OverlapBufferOne
		if _, err := s.Put(ctx, d, q.Now()); err != nil {
			t.Fatal(err)
		}
		runRunner(t, &scheduler.ScheduleRunner{Schedules: s, Safety: 50 * time.Millisecond,
			OnError: func(id string, err error) { t.Errorf("schedule %s: %v", id, err) }})
		waitUntil(t, ctx, "two ticks skipped", func() bool { return get(t, s, "buf").Skipped >= 2 })
		if ids := readyIDs(t, q, "rb"); len(ids) != 1 {
			t.Fatalf("buffer_one: %d jobs waiting: %v", len(ids), ids)
		}
	})
}

// A backfill enqueues each tick of its range once, oldest first, and
// asked twice enqueues nothing more; ticks the schedule already ran are
// not run again, and ticks from its next one on are left to it. Run now
// enqueues one job outside the ticks.
func TestSchedules_BackfillEnqueuesEachTickOnceOldestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s := &scheduler.Schedules{Queue: q}
		sc, err := s.Put(ctx, def(t, "bf", "rf"), q.Now())
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, ctx, "the next tick passed", func() bool { return q.Now().After(sc.Next.Add(50 * time.Millisecond)) })
		if err := (&scheduler.ScheduleRunner{Schedules: s}).Step(ctx, "bf"); err != nil { // fires sc.Next
			t.Fatal(err)
		}
		ran := scheduler.TickJobID("bf", "rf", sc.Next)
		from, to := sc.Next.Add(-5*time.Second), sc.Next.Add(time.Hour)
		got, err := s.Backfill(ctx, "bf", from, to)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 5 {
			t.Fatalf("backfill enqueued %v; want the five ticks before the one that ran", got)
		}
		for i, id := range got {
			if want := scheduler.TickJobID("bf", "rf", from.Add(time.Duration(i)*time.Second)); id != want {
				t.Fatalf("backfilled job %d is %s, want the tick's %s (oldest first)", i, id, want)
			}
		}
		if again, err := s.Backfill(ctx, "bf", from, to); err != nil || len(again) != 0 {
			t.Fatalf("backfill asked twice enqueued %v, %v; want nothing more", again, err)
		}
		ids := readyIDs(t, q, "rf")
		if len(ids) != 6 || ids[0] != ran {
			t.Fatalf("ready %v; want the tick that ran, then the five backfilled", ids)
		}
		if _, err := s.Backfill(ctx, "bf", to, from); !errors.Is(err, scheduler.ErrBadRange) {
			t.Fatalf("a reversed range: %v; want ErrBadRange", err)
		}
		now, err := s.RunNow(ctx, "bf")
		if err != nil || now == "" {
			t.Fatalf("RunNow = %q, %v", now, err)
		}
		if ids := readyIDs(t, q, "rf"); len(ids) != 7 || ids[6] != now {
			t.Fatalf("after RunNow ready %v", ids)
		}
		if got := get(t, s, "bf"); got.Fired != 1 || !got.Next.Equal(sc.Next.Add(time.Second)) {
			t.Fatalf("backfill and run now changed the schedule's state: fired %d, next %v", got.Fired, got.Next)
		}
	})
}

// Redis killed (SIGKILL) and restarted while three runners fire a schedule
// every second: what Redis acknowledged survives, and each tick is still
// one job, before, during and after the restart; the runners go on firing.
func TestSchedules_ARedisRestartLeavesOneJobPerTick(t *testing.T) {
	t.Parallel()
	srv := redistest.StartPersistent(t)
	rdb := srv.Client(t)
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := &scheduler.Schedules{Queue: q}
	if _, err := s.Put(ctx, def(t, "restart", "r"), q.Now()); err != nil {
		t.Fatal(err)
	}
	var stops []func()
	for range 3 {
		stops = append(stops, runRunner(t, &scheduler.ScheduleRunner{Schedules: s, Safety: 50 * time.Millisecond}))
	}
	fired := func() int64 {
		sc, err := s.Get(ctx, "restart")
		if err != nil {
			return -1
		}
		return sc.Fired
	}
	waitUntil(t, ctx, "two ticks before the restart", func() bool { return fired() >= 2 })
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	before := fired()
	waitUntil(t, ctx, "two ticks after the restart", func() bool { return fired() >= before+2 })
	for _, stop := range stops {
		stop()
	}
	checkOnePerTick(t, q, s, "restart", "r")
}

// A tick's jitter is the same on every scheduler (drawn from the schedule
// id and the tick), within its bound, and the index holds the schedule
// until its tick plus that jitter.
func TestSchedules_JitterIsSharedBoundedAndDelaysTheTick(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		tick := time.Unix(1_800_000_000, 0)
		seen := map[time.Duration]bool{}
		for i := range 50 {
			j := scheduler.JitterOf("j", tick.Add(time.Duration(i)*time.Second), 30*time.Second)
			if j < 0 || j > 30*time.Second || j != scheduler.JitterOf("j", tick.Add(time.Duration(i)*time.Second), 30*time.Second) {
				t.Fatalf("jitter %v of tick %d: out of [0, 30s] or not the same twice", j, i)
			}
			seen[j] = true
		}
		if len(seen) < 10 {
			t.Fatalf("50 ticks drew %d jitters; want them spread", len(seen))
		}
		s := &scheduler.Schedules{Queue: q}
		d := def(t, "jit", "r")
		d.Jitter = 30 * time.Second
		sc, err := s.Put(ctx, d, q.Now())
		if err != nil {
			t.Fatal(err)
		}
		score, err := q.Client().ZScore(ctx, s.IndexKey(scheduler.BucketOf("jit")), "jit").Result()
		if want := sc.Next.Add(scheduler.JitterOf("jit", sc.Next, d.Jitter)); err != nil || int64(score) != want.UnixMilli() {
			t.Fatalf("indexed at %v, %v; want the tick plus its jitter, %v", int64(score), err, want.UnixMilli())
		}
	})
}
