package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robfig/cron/v3"

	"github.com/bananas-go/bananas/queue"
)

// CronEntry is a task to enqueue on a schedule.
type CronEntry struct {
	Name, Route string
	Priority    queue.Priority
	Spec, TZ    string
	// Job builds the job of one tick (its id, envelope, retries).
	Job func(tick time.Time) (queue.NewJob, error)
}

// Cron fires cron entries. Any number of Cron runners may run, in any number
// of processes: each tick of each entry is enqueued exactly once, because
// firing is a compare-and-set on the tick in the entry's state hash, done in
// the same script that enqueues the job (queue.FireCron). Nothing is locked,
// so nothing can expire half-way through a fire.
//
// Ticks are the schedule's own times (whole seconds for @every, whole minutes
// for five-field specs), so every runner computes the same ones. A runner that
// wakes late fires the latest tick that is due and skips the earlier ones:
// ticks missed while no scheduler ran are not back-filled.
//
// A fire that fails for want of Redis (unreachable, connection lost, reply
// timed out, a server loading or failing over: see Unreachable) is tried again, after a backoff from 100 ms doubling up to 5 s,
// until it lands or the entry's next tick falls due and supersedes it: a tick
// whose only scheduler met a network blip is not lost. Trying again is safe
// however the first try ended, because firing is a compare-and-set on the
// tick. A fire refused by Redis itself (a script error) or whose job cannot
// be built is not retried; its error is recorded in the entry's last_error.
type Cron struct {
	Queue   *queue.Queue
	Entries []CronEntry
	// OnFire is told of every tick this runner fired (optional).
	OnFire func(e CronEntry, tick time.Time, jobID string)
	// OnError is told of failed fires, each try (optional), but for those
	// that failed for want of Redis when Outage is set. The entry's
	// last_error records those that are not retried.
	OnError func(e CronEntry, err error)
	// Outage, when set, is told of every fire that fails for want of Redis
	// and of every fire that reaches it: it logs a run of failures once
	// when it starts and once when it ends.
	Outage *OutageLog
}

// The backoff between tries of a fire that failed for want of Redis.
const (
	fireRetryFirst = 100 * time.Millisecond
	fireRetryMax   = 5 * time.Second
)

type plan struct {
	e     CronEntry
	s     cron.Schedule
	loc   *time.Location
	next  time.Time
	retry *retry // a tick to fire again, or nil
}

// retry is a tick whose fire failed for want of Redis, with the job built for
// it (the same id on every try).
type retry struct {
	tick time.Time
	job  queue.NewJob
	wait time.Duration // the backoff that led to at
	at   time.Time
}

// Run fires entries until ctx ends.
func (c *Cron) Run(ctx context.Context) error {
	if len(c.Entries) == 0 {
		<-ctx.Done()
		return nil
	}
	// Ticks are judged on Redis's clock (queue.Now), so that schedulers on
	// hosts whose clocks differ agree on when a tick is due.
	now := c.Queue.Now()
	plans := make([]*plan, 0, len(c.Entries))
	for _, e := range c.Entries {
		s, loc, err := ParseSpec(e.Spec, e.TZ)
		if err != nil {
			return err
		}
		plans = append(plans, &plan{e: e, s: s, loc: loc, next: s.Next(now.In(loc))})
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wake := plans[0].due()
		for _, p := range plans[1:] {
			if d := p.due(); d.Before(wake) {
				wake = d
			}
		}
		timer.Reset(wake.Sub(c.Queue.Now()))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		now := c.Queue.Now()
		for _, p := range plans {
			switch {
			case !p.next.After(now):
				tick := p.next
				for n := p.s.Next(tick); !n.After(now); n = p.s.Next(n) {
					tick = n // woke late: the latest due tick, no back-fill
				}
				p.next = p.s.Next(tick)
				p.retry = nil // superseded by a later tick
				job, err := p.e.Job(tick)
				if err != nil {
					c.report(ctx, p, err)
					continue
				}
				c.fire(ctx, p, tick, job, 0)
			case p.retry != nil && !p.retry.at.After(now):
				c.fire(ctx, p, p.retry.tick, p.retry.job, p.retry.wait)
			}
		}
	}
}

// due is when p next needs the loop: its next tick, or a retry before it.
func (p *plan) due() time.Time {
	if p.retry != nil && p.retry.at.Before(p.next) {
		return p.retry.at
	}
	return p.next
}

// fire fires tick of p with job; waited is the backoff before this try (0
// for the first). A failure for want of Redis schedules the next try.
func (c *Cron) fire(ctx context.Context, p *plan, tick time.Time, job queue.NewJob, waited time.Duration) {
	p.retry = nil
	fired, err := c.Queue.FireCron(ctx, queue.CronFire{
		Route: p.e.Route, Priority: p.e.Priority, Tick: tick, Next: p.next, Job: job, Spec: p.e.Spec, TZ: p.e.TZ,
	}, c.Queue.Now())
	if c.Outage != nil && ctx.Err() == nil {
		if err != nil && Unreachable(err) {
			c.Outage.Failed("", err)
		} else {
			c.Outage.OK("")
		}
	}
	if err == nil {
		if fired && c.OnFire != nil {
			c.OnFire(p.e, tick, job.ID)
		}
		return
	}
	if ctx.Err() != nil {
		return
	}
	if !Unreachable(err) {
		c.report(ctx, p, err)
		return
	}
	wait := fireRetryFirst
	if waited > 0 {
		wait = min(2*waited, fireRetryMax)
	}
	p.retry = &retry{tick: tick, job: job, wait: wait, at: c.Queue.Now().Add(wait)}
	if c.OnError != nil && c.Outage == nil { // an Outage logs these, once per outage
		c.OnError(p.e, err)
	}
}

// report records a fire that failed for good in the entry's last_error and
// tells OnError.
func (c *Cron) report(ctx context.Context, p *plan, err error) {
	if ctx.Err() != nil {
		return
	}
	_ = c.Queue.SetCronError(ctx, p.e.Route, p.e.Name, err.Error())
	if c.OnError != nil {
		c.OnError(p.e, err)
	}
}

// NextRun returns the first tick of spec in tz after t.
func NextRun(spec, tz string, t time.Time) (time.Time, error) {
	s, loc, err := ParseSpec(spec, tz)
	if err != nil {
		return time.Time{}, err
	}
	return s.Next(t.In(loc)), nil
}

// PauseCron pauses (or, with paused false, resumes) the cron entry of the
// code name on route: a paused entry fires nothing on any scheduler and
// keeps its next tick (queue's cron.lua reads the flag, cron_pause.lua
// sets it, in the entry's state hash).
func PauseCron(ctx context.Context, q *queue.Queue, route, name string, paused bool, now time.Time) error {
	p := 0
	if paused {
		p = 1
	}
	// Retry-safe: a second run sets what the first did.
	if err := lua().cronPause.Run(ctx, q.Client(), []string{q.Keys(route).Cron(name)}, p, ms(now)).Err(); err != nil {
		return fmt.Errorf("pause cron entry %s: %w", name, err)
	}
	return nil
}

// CronRef names a cron entry of the code: its task and route.
type CronRef struct{ Name, Route string }

// CronPaused reports, for each of entries, whether it is paused, in one
// pipelined round trip.
func CronPaused(ctx context.Context, q *queue.Queue, entries []CronRef) ([]bool, error) {
	out := make([]bool, len(entries))
	if len(entries) == 0 {
		return out, nil
	}
	pipe := q.Client().Pipeline()
	cmds := make([]*redis.StringCmd, len(entries))
	for i, e := range entries {
		cmds[i] = pipe.HGet(ctx, q.Keys(e.Route).Cron(e.Name), "paused")
	}
	_, _ = pipe.Exec(ctx)
	for i, c := range cmds {
		v, err := c.Result()
		if err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
			return nil, fmt.Errorf("read cron entry %s: %w", entries[i].Name, err)
		}
		out[i] = v == "1"
	}
	return out, nil
}

// isWrongType: a state key of another type (garbage, which the next fire
// resets) holds no pause.
func isWrongType(err error) bool { return strings.HasPrefix(err.Error(), "WRONGTYPE") }
