package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// aheadSetup puts schedule id (allow, hourly) on route on a queue whose
// clock the test moves (at), so that the moments around a tick are exact.
func aheadSetup(t *testing.T, q *queue.Queue, id, route string) (s *scheduler.Schedules, sc scheduler.Schedule, at func(time.Time)) {
	t.Helper()
	var mono atomic.Int64
	q.UseMonotonicClock(func() time.Duration { return time.Duration(mono.Load()) })
	s = &scheduler.Schedules{Queue: q}
	d := def(t, id, route)
	d.Spec = "@every 1h"
	sc, err := s.Put(context.Background(), d, q.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s, sc, func(when time.Time) { mono.Add(int64(when.Sub(q.Now()))) }
}

func step(t *testing.T, s *scheduler.Schedules, id string) {
	t.Helper()
	if err := (&scheduler.ScheduleRunner{Schedules: s}).Step(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

func readyList(t *testing.T, q *queue.Queue, route string) []string {
	t.Helper()
	ids, err := q.Client().LRange(context.Background(), q.Keys(route).List(queue.Normal), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// An allow schedule's tick is claimed Ahead of it and its job written
// scheduled, ReleaseFallback after the tick: the promoter makes it ready
// then if the runner that wrote it did not first.
func TestSchedules_AnAllowTickIsWrittenAheadAndReadyAtItsTick(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		s, sc, at := aheadSetup(t, q, "a", "ra")
		job := scheduler.TickJobID("a", "ra", sc.Next)
		at(sc.Next.Add(-scheduler.Ahead - time.Millisecond))
		step(t, s, "a")
		if got := get(t, s, "a"); got.Fired != 0 || len(readyIDs(t, q, "ra")) != 0 {
			t.Fatalf("before Ahead of the tick: fired %d, jobs %v", got.Fired, readyIDs(t, q, "ra"))
		}
		at(sc.Next.Add(-scheduler.Ahead / 2))
		step(t, s, "a")
		fallback := sc.Next.Add(scheduler.ReleaseFallback)
		score, err := q.Client().ZScore(ctx, q.Keys("ra").Scheduled(), job).Result()
		if err != nil || int64(score) != fallback.UnixMilli() {
			t.Fatalf("the tick's job in the scheduled set at %v, %v; want at its tick plus the fallback %v", score, err, fallback.UnixMilli())
		}
		if got := get(t, s, "a"); got.Fired != 1 || got.LastJob != job || len(readyList(t, q, "ra")) != 0 {
			t.Fatalf("claimed ahead: fired %d, last job %q, ready %v", got.Fired, got.LastJob, readyList(t, q, "ra"))
		}
		// Its runner makes it ready at the tick (Pass does, not Step); when
		// the runner died, the promoter does, ReleaseFallback later.
		if n, err := q.Jobs.Promote(ctx, "ra", fallback.Add(-time.Millisecond)); err != nil || n != 0 {
			t.Fatalf("promoted %d, %v before the fallback", n, err)
		}
		if n, err := q.Jobs.Promote(ctx, "ra", fallback); err != nil || n != 1 {
			t.Fatalf("promoted %d, %v at the fallback; want its job", n, err)
		}
		if ids := readyList(t, q, "ra"); len(ids) != 1 || ids[0] != job {
			t.Fatalf("ready at the tick: %v; want %s", ids, job)
		}
	})
}

// Paused within Ahead of a tick whose job is written already, the job is
// withdrawn and the tick kept as the schedule's next: nothing runs while it
// is paused, and resumed, the tick fires once.
func TestSchedules_APauseWithdrawsATickClaimedAheadAndKeepsIt(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		s, sc, at := aheadSetup(t, q, "p", "rp")
		job := scheduler.TickJobID("p", "rp", sc.Next)
		at(sc.Next.Add(-scheduler.Ahead / 2))
		step(t, s, "p")
		if len(readyIDs(t, q, "rp")) != 1 {
			t.Fatalf("claimed ahead: jobs %v", readyIDs(t, q, "rp"))
		}
		for range 2 { // a resend after a lost reply changes nothing more
			if err := s.Pause(ctx, "p", true, q.Now()); err != nil {
				t.Fatal(err)
			}
			if ids := readyIDs(t, q, "rp"); len(ids) != 0 {
				t.Fatalf("paused: jobs %v; want the tick's withdrawn", ids)
			}
			if n, _ := q.Client().Exists(ctx, q.Keys("rp").Job(job)).Result(); n != 0 {
				t.Fatal("paused: the withdrawn job's record is left")
			}
			if got := get(t, s, "p"); !got.Next.Equal(sc.Next) || got.Fired != 0 {
				t.Fatalf("paused: next %v, fired %d; want the withdrawn tick %v kept, none fired", got.Next, got.Fired, sc.Next)
			}
		}
		at(sc.Next.Add(100 * time.Millisecond))
		step(t, s, "p")
		if ids := readyIDs(t, q, "rp"); len(ids) != 0 {
			t.Fatalf("paused past the tick: jobs %v", ids)
		}
		if err := s.Pause(ctx, "p", false, q.Now()); err != nil {
			t.Fatal(err)
		}
		step(t, s, "p")
		step(t, s, "p")
		if ids := readyList(t, q, "rp"); len(ids) != 1 || ids[0] != job {
			t.Fatalf("resumed: ready %v; want the kept tick's job %s once", ids, job)
		}
		if got := get(t, s, "p"); got.Fired != 1 {
			t.Fatalf("resumed: fired %d; want 1", got.Fired)
		}
	})
}

// A tick claimed ahead whose claim another scheduler has not finished when
// the schedule is paused is dropped: finishing the claim enqueues nothing.
// Deleted within Ahead of a tick whose job is written, a schedule's job is
// withdrawn: a deleted schedule fires nothing more.
func TestSchedules_APauseOrDeleteWithinAheadOfATickRunsNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		s, sc, at := aheadSetup(t, q, "c", "rc")
		job := scheduler.TickJobID("c", "rc", sc.Next)
		at(sc.Next.Add(-scheduler.Ahead / 2))
		// A claim of the tick ahead, as a runner leaves it before its enqueue.
		if err := q.Client().HSet(ctx, s.Key("c"), "pend_tick", sc.Next.UnixMilli(), "pend_job", job,
			"next", sc.Next.Add(time.Hour).UnixMilli()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Pause(ctx, "c", true, q.Now()); err != nil {
			t.Fatal(err)
		}
		step(t, s, "c") // finishes the claim
		if ids := readyIDs(t, q, "rc"); len(ids) != 0 {
			t.Fatalf("a claim finished after the pause enqueued %v", ids)
		}
		if got := get(t, s, "c"); got.Pending != "" {
			t.Fatalf("the claim is left: %q", got.Pending)
		}

		_, sc2, at2 := aheadSetup(t, q, "d", "rd")
		at2(sc2.Next.Add(-scheduler.Ahead / 2))
		step(t, s, "d")
		if len(readyIDs(t, q, "rd")) != 1 {
			t.Fatalf("claimed ahead: jobs %v", readyIDs(t, q, "rd"))
		}
		if err := s.Delete(ctx, "d"); err != nil {
			t.Fatal(err)
		}
		if ids := readyIDs(t, q, "rd"); len(ids) != 0 {
			t.Fatalf("deleted: jobs %v; want the tick's withdrawn", ids)
		}
	})
}

// A runner's pass makes the jobs it wrote ahead ready at their ticks, not
// before, without the promoter; a job withdrawn meanwhile stays withdrawn.
func TestSchedules_APassMakesTheJobsItWroteAheadReadyAtTheirTicks(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, sc, at := aheadSetup(t, q, "r", "rr")
		job := scheduler.TickJobID("r", "rr", sc.Next)
		at(sc.Next.Add(-scheduler.Ahead / 2))
		if _, err := (&scheduler.ScheduleRunner{Schedules: s}).Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if ids := readyIDs(t, q, "rr"); len(ids) != 1 || len(readyList(t, q, "rr")) != 0 {
			t.Fatalf("written ahead: jobs %v, ready %v; want its job scheduled", ids, readyList(t, q, "rr"))
		}
		at(sc.Next) // the release, waiting for the tick, sees it come
		waitUntil(t, ctx, "the tick's job ready", func() bool { return len(readyList(t, q, "rr")) == 1 })
		if ids := readyList(t, q, "rr"); ids[0] != job {
			t.Fatalf("ready %v; want %s", ids, job)
		}
		if n, _ := q.Client().ZCard(ctx, q.Keys("rr").Scheduled()).Result(); n != 0 {
			t.Fatalf("%d jobs left in the scheduled set", n)
		}
	})
}
