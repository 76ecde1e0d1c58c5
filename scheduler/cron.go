package scheduler

import (
	"context"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/bananas-go/bananas/queue"
)

// CronEntry is a task to enqueue on a schedule.
type CronEntry struct {
	Name, Route, Priority string
	Spec, TZ              string
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
type Cron struct {
	Queue   *queue.Queue
	Entries []CronEntry
	// OnFire is told of every tick this runner fired (optional).
	OnFire func(e CronEntry, tick time.Time, jobID string)
	// OnError is told of failed fires (optional); the entry's last_error records them too.
	OnError func(e CronEntry, err error)
}

type plan struct {
	e    CronEntry
	s    cron.Schedule
	loc  *time.Location
	next time.Time
}

// Run fires entries until ctx ends.
func (c *Cron) Run(ctx context.Context) error {
	if len(c.Entries) == 0 {
		<-ctx.Done()
		return nil
	}
	now := time.Now()
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
		earliest := plans[0].next
		for _, p := range plans[1:] {
			if p.next.Before(earliest) {
				earliest = p.next
			}
		}
		timer.Reset(time.Until(earliest))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		now := time.Now()
		for _, p := range plans {
			if p.next.After(now) {
				continue
			}
			tick := p.next
			for n := p.s.Next(tick); !n.After(now); n = p.s.Next(n) {
				tick = n // woke late: the latest due tick, no back-fill
			}
			p.next = p.s.Next(tick)
			c.fire(ctx, p, tick, now)
		}
	}
}

func (c *Cron) fire(ctx context.Context, p *plan, tick, now time.Time) {
	job, err := p.e.Job(tick)
	if err == nil {
		var fired bool
		fired, err = c.Queue.FireCron(ctx, queue.CronFire{
			Route: p.e.Route, Priority: p.e.Priority, Tick: tick, Next: p.next, Job: job, Spec: p.e.Spec, TZ: p.e.TZ,
		}, now)
		if err == nil {
			if fired && c.OnFire != nil {
				c.OnFire(p.e, tick, job.ID)
			}
			return
		}
	}
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
