package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// MaxBackfill is the most ticks one backfill enqueues.
const MaxBackfill = 1000

// RunNow enqueues one job of schedule id now, outside its ticks: a fresh
// id, the schedule's task, args, route and priority. The schedule's own
// ticks and state are left as they are.
func (s *Schedules) RunNow(ctx context.Context, id string) (string, error) {
	sc, err := s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	now := s.Queue.Now()
	job := queue.NewJob{ID: queue.NewID(sc.Route, now), Name: sc.Name, Envelope: sc.Envelope, MaxRetries: sc.MaxRetries}
	if _, err := s.Queue.Jobs.Enqueue(ctx, sc.Route, sc.Priority, []queue.NewJob{job}, now); err != nil {
		return "", fmt.Errorf("run schedule %s now: %w", id, err)
	}
	return job.ID, nil
}

// ErrBadRange is the error of a backfill whose range is empty or too long.
var ErrBadRange = errors.New("bad backfill range")

// Backfill enqueues the job of each tick of schedule id in [from, to] that
// comes before the schedule's next tick, oldest first, and returns their
// ids. Each tick's job has the tick's own id (TickJobID), so a tick already
// run — by the schedule or by an earlier backfill — is not enqueued again
// while its job's record is kept; asked twice, a backfill enqueues each
// tick once. Ticks from the next one on are the schedule's own to fire.
func (s *Schedules) Backfill(ctx context.Context, id string, from, to time.Time) (enqueued []string, err error) {
	if to.Before(from) {
		return nil, fmt.Errorf("%w: to %s is before from %s", ErrBadRange, to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	sc, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	sp, err := ParseScheduleSpec(sc.Spec, sc.TZ, sc.Start, sc.End)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", id, err)
	}
	var jobs []queue.NewJob
	for t := sp.Next(from.Add(-time.Millisecond)); !t.IsZero() && !t.After(to) && (sc.Next.IsZero() || t.Before(sc.Next)); t = sp.Next(t) {
		if len(jobs) == MaxBackfill {
			return nil, fmt.Errorf("%w: more than %d ticks from %s to %s: backfill a shorter range", ErrBadRange, MaxBackfill, from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
		jobs = append(jobs, queue.NewJob{ID: TickJobID(id, sc.Route, t), Name: sc.Name, Envelope: sc.Envelope, MaxRetries: sc.MaxRetries, ChosenID: true})
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	// Retry-safe: each job's id is the tick's; enqueue.lua refuses an id
	// that is there (a holder), and answers a resend from its receipt.
	holders, err := s.Queue.Jobs.Enqueue(ctx, sc.Route, sc.Priority, jobs, s.Queue.Now())
	if err != nil {
		return nil, fmt.Errorf("backfill schedule %s: %w", id, err)
	}
	for i, h := range holders {
		if h == "" {
			enqueued = append(enqueued, jobs[i].ID)
		}
	}
	return enqueued, nil
}
