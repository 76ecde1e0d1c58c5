package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// CronFire is one tick of a cron entry to fire.
type CronFire struct {
	Route      string
	Priority   Priority
	Tick, Next time.Time
	Job        NewJob // its ID, Name, Envelope and MaxRetries are used
	Spec, TZ   string
}

// FireCron enqueues the tick's job unless this tick (or a later one) of the
// entry was already fired, by any scheduler. It reports whether it fired.
func (q *Queue) FireCron(ctx context.Context, f CronFire, now time.Time) (bool, error) {
	if err := q.noteRoute(ctx, f.Route); err != nil {
		return false, err
	}
	defer q.routeWritten(f.Route)
	k := q.Keys(f.Route)
	keys := []string{k.Cron(f.Job.Name), k.List(f.Priority), k.Stats(), k.Job(f.Job.ID), k.Series(HourOf(now)), k.Idle()}
	// Retry-safe: compare-and-set on the tick; a second run finds it fired.
	n, err := q.s.cron.Run(ctx, q.rdb, keys, ms(f.Tick), ms(f.Next), ms(now), f.Job.ID, f.Job.Name, f.Job.Envelope,
		string(f.Priority), f.Job.MaxRetries, k.WakeChannel(), f.Spec, f.TZ).Int()
	if err != nil {
		return false, fmt.Errorf("fire cron %s: %w", f.Job.Name, err)
	}
	return n == 1, nil
}

// CronState is what `cron list` shows of an entry.
type CronState struct {
	LastRun, NextRun time.Time
	RunCount         int64
	LastJob          string
	LastError        string
}

// CronState reads the state of cron entry name on route (zero when it never fired).
func (q *Queue) CronState(ctx context.Context, route, name string) (CronState, error) {
	m, err := q.rdb.HGetAll(ctx, q.Keys(route).Cron(name)).Result()
	if err != nil {
		return CronState{}, err
	}
	n, _ := strconv.ParseInt(m["run_count"], 10, 64)
	return CronState{LastRun: parseMS(m["last_run"]), NextRun: parseMS(m["next_run"]), RunCount: n,
		LastJob: m["last_job"], LastError: m["last_error"]}, nil
}

// SetCronError records why the scheduler could not fire an entry.
func (q *Queue) SetCronError(ctx context.Context, route, name, msg string) error {
	return q.rdb.HSet(ctx, q.Keys(route).Cron(name), "last_error", msg).Err()
}
