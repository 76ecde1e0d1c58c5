package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// Schedule registers task t to be enqueued on spec (in time zone tz, "" for
// UTC). Generated Register functions call it for //bananas:cron functions.
// Every worker (and `scheduler` process) runs the schedules registered on it;
// each tick is enqueued exactly once however many run. A bad spec or zone is
// an error of Run.
func Schedule[A, R any](w *Worker, t *Task[A, R], spec, tz string) {
	if _, _, err := scheduler.ParseSpec(spec, tz); err != nil {
		w.regErrs = append(w.regErrs, fmt.Errorf("cron entry %s: %w", t.name, err))
		return
	}
	cfg, err := t.config(nil)
	if err != nil {
		w.regErrs = append(w.regErrs, fmt.Errorf("cron entry %s: %w", t.name, err))
		return
	}
	cfg.unsharded = true
	w.cron = append(w.cron, cronEntry{
		Schedule: bananastype.Schedule{ID: t.name, Source: bananastype.SourceCode, Name: t.name, Route: cfg.route,
			Priority: cfg.priority, Spec: spec, TZ: tz, Overlap: bananastype.OverlapAllow},
		job: func(c *Client, tick time.Time) (queue.NewJob, error) {
			var zero A
			return t.newJob(c, cfg, zero, tick, time.Time{})
		},
	})
}

// CronEntries returns the cron entries registered on w as schedules
// (Source code), as CronStatus does without reading their state (LastRun,
// NextRun, ... left zero).
func (w *Worker) CronEntries() []bananastype.Schedule {
	out := make([]bananastype.Schedule, len(w.cron))
	for i, e := range w.cron {
		out[i] = e.Schedule
	}
	return out
}

// CronStatus reads the state of every entry registered on w, each a
// schedule of Source code (paused or not included). The last error is the
// scheduler's, or else the failure of the entry's last job.
func (w *Worker) CronStatus(ctx context.Context) ([]bananastype.Schedule, error) {
	refs := make([]scheduler.CronRef, len(w.cron))
	for i, e := range w.cron {
		refs[i] = scheduler.CronRef{Name: e.Name, Route: e.Route}
	}
	paused, err := scheduler.CronPaused(ctx, w.c.q, refs)
	if err != nil {
		return nil, err
	}
	out := make([]bananastype.Schedule, 0, len(w.cron))
	for i, e := range w.cron {
		st, err := w.c.q.CronState(ctx, e.Route, e.Name)
		if err != nil {
			return nil, err
		}
		cs := e.Schedule
		cs.Paused = paused[i]
		cs.LastRun, cs.NextRun, cs.RunCount, cs.LastJob, cs.LastError = st.LastRun, st.NextRun, st.RunCount, st.LastJob, st.LastError
		if now := w.c.q.Now(); cs.NextRun.IsZero() || cs.NextRun.Before(now) {
			cs.NextRun, _ = scheduler.NextRun(e.Spec, e.TZ, now)
		}
		if cs.LastError == "" && st.LastJob != "" {
			if info, err := w.c.Job(ctx, st.LastJob); err == nil && info.Error != "" {
				cs.LastError = info.Error
			}
		}
		out = append(out, cs)
	}
	return out, nil
}
