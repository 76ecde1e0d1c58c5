package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// DefaultScheduleSafety is the longest a ScheduleRunner sleeps: a schedule
// put or resumed by another process is seen within it.
const DefaultScheduleSafety = time.Second

// maxStepTicks bounds the ticks one look at one schedule handles (a long
// catch-up window fires its missed ticks over several passes), and
// maxTickWalk the ticks walked to find the latest due one: past it, every
// missed tick is older than any catch-up window worth walking.
const (
	maxStepTicks = 100
	maxTickWalk  = 100_000
)

// ScheduleRunner fires the due ticks of schedules as data. Any number of
// runners may run, in any number of processes: each tick is enqueued once.
// A tick's life is three scripts, each retry-safe: a claim in the
// schedule's slot (sched_claim.lua: compare-and-set on its next tick, which
// one runner wins, recording the tick's job id), the enqueue in the route's
// slot (sched_fire.lua: compare-and-set on the schedule's last enqueued
// tick, and the job written with it), and the claim marked done
// (sched_done.lua). A runner killed between them leaves the claim to any
// other, whose enqueue of it the route's compare-and-set makes the same one
// job; the job's id is derived from the schedule id and the tick
// (TickJobID), so every runner writes the same job.
type ScheduleRunner struct {
	Schedules *Schedules
	// Cancel cancels a running job (bananastype.OverlapCancelRunning). Nil: such a
	// schedule behaves as bananastype.OverlapAllow.
	Cancel func(ctx context.Context, jobID string) error
	// OnFire is told of each tick whose job this runner enqueued (optional).
	OnFire func(sc Schedule, tick time.Time, jobID string)
	// OnSkip is told of each tick this runner skipped because the last
	// tick's job was unfinished (optional): bananas_schedule_skipped_total.
	OnSkip func(sc Schedule, tick time.Time)
	// OnError is told of a schedule that could not be handled (optional).
	OnError func(id string, err error)
	// Safety bounds a sleep. Default DefaultScheduleSafety.
	Safety time.Duration
	// Outage, when set, is told of every pass, failed or not.
	Outage *OutageLog
	// Active, when set, says whether this runner fires schedules now; one
	// that is not calls Redis not at all and asks again after Safety. (A
	// worker's runner is active while it keeps a route, so that idle
	// standby workers cost Redis nothing.)
	Active func() bool
}

// batch is how many due schedules one pass reads from the index.
const batch = 500

// Run fires due schedules until ctx ends.
func (r *ScheduleRunner) Run(ctx context.Context) {
	safety := r.Safety
	if safety <= 0 {
		safety = DefaultScheduleSafety
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if r.Active != nil && !r.Active() {
			timer.Reset(safety)
			continue
		}
		wake, err := r.Pass(ctx)
		if r.Outage != nil && ctx.Err() == nil {
			if err != nil && Unreachable(err) {
				r.Outage.Failed("", err)
			} else {
				r.Outage.OK("")
			}
		}
		if err != nil && r.OnError != nil && ctx.Err() == nil && (r.Outage == nil || !Unreachable(err)) {
			r.OnError("", err)
		}
		now := r.Schedules.Queue.Now()
		sleep := safety
		if err == nil && !wake.IsZero() {
			sleep = min(max(wake.Sub(now), 0), safety)
		}
		timer.Reset(sleep)
	}
}

// Pass handles every schedule due now and returns when the earliest other
// one falls due (zero when none is indexed).
func (r *ScheduleRunner) Pass(ctx context.Context) (time.Time, error) {
	rdb := r.Schedules.Queue.Client()
	s := r.Schedules
	for {
		now := s.Queue.Now()
		ids, err := rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.IndexKey(), ByScore: true, Start: "-inf", Stop: fmt.Sprint(ms(now)), Count: batch}).Result()
		if err != nil {
			return time.Time{}, fmt.Errorf("read the schedules index: %w", err)
		}
		if err := r.stepAll(ctx, ids, now); err != nil {
			return time.Time{}, err
		}
		if len(ids) < batch {
			break
		}
	}
	first, err := rdb.ZRangeWithScores(ctx, s.IndexKey(), 0, 0).Result()
	if err != nil || len(first) == 0 || int64(first[0].Score) >= parked {
		return time.Time{}, err
	}
	return time.UnixMilli(int64(first[0].Score)), nil
}

// stepParallel is how many schedules one runner handles at once: the
// steps of different schedules are independent, and each is a few round
// trips, so many due at one second (a spec shared by thousands of
// schedules) fire together rather than one after another.
const stepParallel = 16

// stepAll steps each of ids, stepParallel at a time. It returns an error
// only for want of Redis (or ctx's end): a schedule that fails otherwise is
// told to OnError and looked at again after the safety period, not in a
// hot loop.
func (r *ScheduleRunner) stepAll(ctx context.Context, ids []string, now time.Time) error {
	s := r.Schedules
	sem := make(chan struct{}, stepParallel)
	var mu sync.Mutex
	var down error
	var wg sync.WaitGroup
	for _, id := range ids {
		mu.Lock()
		stop := down != nil
		mu.Unlock()
		if stop {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := r.Step(ctx, id)
			switch {
			case err == nil:
			case ctx.Err() != nil || Unreachable(err):
				mu.Lock()
				if down == nil {
					down = err
				}
				mu.Unlock()
			default:
				if r.OnError != nil {
					r.OnError(id, err)
				}
				_ = s.Queue.Client().ZAdd(ctx, s.IndexKey(), redis.Z{Score: float64(ms(now.Add(DefaultScheduleSafety))), Member: id}).Err()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return down
}

// Step handles schedule id: finishes a claimed tick, claims and fires the
// due ones (as its catch-up window and overlap policy say), and puts the
// schedule back in the index at the time it next needs a runner.
func (r *ScheduleRunner) Step(ctx context.Context, id string) error {
	s := r.Schedules
	for range maxStepTicks {
		sc, err := s.Get(ctx, id)
		if errors.Is(err, ErrNoSchedule) {
			return s.unindex(ctx, id)
		}
		if err != nil {
			return err
		}
		if sc.Pending != "" {
			if err := r.finish(ctx, sc); err != nil {
				return err
			}
			continue
		}
		now := s.Queue.Now()
		if sc.Paused || sc.Next.IsZero() || ms(now) < sc.due() {
			return s.index(ctx, sc)
		}
		c, err := r.plan(ctx, sc, now)
		if err != nil {
			return err
		}
		got, err := s.claim(ctx, sc, c, now)
		if err != nil {
			return err
		}
		switch got {
		case "ok":
			if c.what == "skip" && r.OnSkip != nil {
				r.OnSkip(sc, c.tick)
			}
			// The claim's outcome is known: finish it and, when no further
			// tick is due, index the schedule, without reading it again.
			sc.Next = c.next
			if c.what == "fire" {
				sc.Pending, sc.pendTick = c.job, c.tick
				if err := r.finish(ctx, sc); err != nil {
					return err
				}
				sc.Pending, sc.LastJob = "", c.job
			}
			if now := s.Queue.Now(); sc.Next.IsZero() || ms(now) < sc.due() {
				return s.index(ctx, sc)
			}
		case "gone":
			return s.unindex(ctx, id)
		case "paused", "stale", "pending": // read it again
		default:
			return fmt.Errorf("schedule %s: claim answered %q", id, got)
		}
	}
	return nil
}

// claimPlan is what one claim does to a schedule.
type claimPlan struct {
	what string // fire, skip, miss
	tick time.Time
	next time.Time
	job  string
}

// plan decides the claim of sc's due ticks at now: which tick fires (or is
// skipped), and the next tick after it.
func (r *ScheduleRunner) plan(ctx context.Context, sc Schedule, now time.Time) (claimPlan, error) {
	sp, err := ParseScheduleSpec(sc.Spec, sc.TZ, sc.Start, sc.End)
	if err != nil {
		return claimPlan{}, fmt.Errorf("schedule %s: %w", sc.ID, err)
	}
	dueAt := func(t time.Time) time.Time { return t.Add(JitterOf(sc.ID, t, sc.Jitter)) }
	window := max(sc.CatchUp, Late)
	// With a catch-up window, the oldest due tick inside it fires (the
	// claim skips those before it); without one, the latest due tick, if it
	// is at most Late late.
	var tick, latest time.Time
	n := 0
	for t := sc.Next; !t.IsZero() && !dueAt(t).After(now); t = sp.Next(t) {
		if n++; n > maxTickWalk { // too many missed ticks to walk: none runs
			latest = time.Time{}
			break
		}
		latest = t
		if sc.CatchUp > 0 && now.Sub(t) <= window {
			tick = t
			break
		}
	}
	if sc.CatchUp == 0 && !latest.IsZero() && now.Sub(latest) <= Late {
		tick = latest
	}
	if tick.IsZero() {
		if latest.IsZero() {
			return claimPlan{what: "miss", next: sp.Next(now)}, nil
		}
		return claimPlan{what: "miss", next: sp.Next(latest)}, nil
	}
	c := claimPlan{what: "fire", tick: tick, next: sp.Next(tick), job: TickJobID(sc.ID, sc.Route, tick)}
	if sc.LastJob == "" || sc.Overlap == bananastype.OverlapAllow {
		return c, nil
	}
	st, err := s0(ctx, r.Schedules.Queue, sc.LastJob)
	if err != nil {
		return claimPlan{}, err
	}
	switch sc.Overlap {
	case bananastype.OverlapSkip:
		if st != "" && !st.Finished() {
			c.what, c.job = "skip", ""
		}
	case bananastype.OverlapBufferOne:
		if st == queue.StatusPending || st == queue.StatusScheduled {
			c.what, c.job = "skip", ""
		}
	case bananastype.OverlapCancelRunning:
		if st != "" && !st.Finished() && r.Cancel != nil {
			if err := r.Cancel(ctx, sc.LastJob); err != nil && !errors.Is(err, queue.ErrNotFound) {
				return claimPlan{}, fmt.Errorf("schedule %s: cancel its last job %s: %w", sc.ID, sc.LastJob, err)
			}
		}
	}
	return c, nil
}

// s0 is the status of job id, "" when it is gone (finished, its record
// expired).
func s0(ctx context.Context, q *queue.Queue, id string) (queue.Status, error) {
	st, err := q.Jobs.Lookup(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up job %s: %w", id, err)
	}
	return st.Status, nil
}

// claim runs sched_claim.lua for c.
func (s *Schedules) claim(ctx context.Context, sc Schedule, c claimPlan, now time.Time) (string, error) {
	// Retry-safe: a second run finds next moved and writes nothing.
	got, err := lua().claim.Run(ctx, s.Queue.Client(), []string{s.Key(sc.ID)},
		ms(sc.Next), msOrZero(c.next), c.what, msOrZero(c.tick), c.job, ms(now)).Text()
	if err != nil {
		return "", fmt.Errorf("claim a tick of schedule %s: %w", sc.ID, err)
	}
	return got, nil
}

// finish enqueues the job of sc's claimed tick (once, whoever else does)
// and marks the claim done.
func (r *ScheduleRunner) finish(ctx context.Context, sc Schedule) error {
	s := r.Schedules
	q := s.Queue
	route, ok := queue.RouteOf(sc.Pending)
	if !ok {
		return fmt.Errorf("schedule %s is garbage: its claimed job id %q names no route", sc.ID, sc.Pending)
	}
	now := q.Now()
	k := q.Keys(route)
	keys := []string{k.ScheduleTick(sc.ID), k.List(sc.Priority), k.Stats(), k.Job(sc.Pending), k.Series(queue.HourOf(now)), k.Idle()}
	// Retry-safe: compare-and-set on the tick; a second run finds it enqueued.
	n, err := lua().fire.Run(ctx, q.Client(), keys, ms(sc.pendTick), ms(now), sc.Pending, sc.Name, sc.Envelope,
		string(sc.Priority), sc.MaxRetries, k.WakeChannel(), sc.ID, tickMarkTTL.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("enqueue the job of schedule %s: %w", sc.ID, err)
	}
	// Retry-safe: a second run finds no claim of the tick.
	if err := lua().done.Run(ctx, q.Client(), []string{s.Key(sc.ID)}, ms(sc.pendTick), sc.Pending, ms(now)).Err(); err != nil {
		return fmt.Errorf("mark the tick of schedule %s done: %w", sc.ID, err)
	}
	if n == 1 && r.OnFire != nil {
		r.OnFire(sc, sc.pendTick, sc.Pending)
	}
	return nil
}

// unindex drops id from the index when its record is gone, and puts it
// back if a put wrote the record meanwhile (a put writes the record, then
// the index).
func (s *Schedules) unindex(ctx context.Context, id string) error {
	if err := s.Queue.Client().ZRem(ctx, s.IndexKey(), id).Err(); err != nil {
		return err
	}
	sc, err := s.Get(ctx, id)
	if errors.Is(err, ErrNoSchedule) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.index(ctx, sc)
}
