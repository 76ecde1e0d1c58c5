package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/worker"
	"github.com/bananas-go/bananas/scheduler"
)

// ScheduleOption configures a schedule made at run time (Task.Schedule):
// Every, InZone, Jitter, Overlap, CatchUp, StartAt, EndAt, and any enqueue
// Option that shapes every tick's job (Route, WithPriority, MaxRetries,
// Timeout, ResultTTL, Description, Header).
type ScheduleOption interface{ applySchedule(*scheduleConfig) }

type scheduleConfig struct {
	def  scheduler.ScheduleDef
	opts []Option
}

type scheduleOption func(*scheduleConfig)

func (o scheduleOption) applySchedule(c *scheduleConfig) { o(c) }

// applySchedule makes an enqueue option an option of every tick's job.
func (o Option) applySchedule(c *scheduleConfig) { c.opts = append(c.opts, o) }

// Every sets a schedule's ticks: five cron fields, six with a leading
// seconds field ("*/5 * * * * *"), or a descriptor such as @every 1s.
func Every(spec string) ScheduleOption {
	return scheduleOption(func(c *scheduleConfig) { c.def.Spec = spec })
}

// InZone reads the schedule's spec in IANA time zone tz (default UTC).
func InZone(tz string) ScheduleOption {
	return scheduleOption(func(c *scheduleConfig) { c.def.TZ = tz })
}

// Jitter delays each tick by up to d, the same delay on every scheduler
// (drawn from the schedule id and the tick), to spread many schedules of
// one spec.
func Jitter(d time.Duration) ScheduleOption {
	return scheduleOption(func(c *scheduleConfig) { c.def.Jitter = d })
}

// The overlap policies of Overlap.
const (
	OverlapSkip          = bananastype.OverlapSkip
	OverlapBufferOne     = bananastype.OverlapBufferOne
	OverlapAllow         = bananastype.OverlapAllow
	OverlapCancelRunning = bananastype.OverlapCancelRunning
)

// Overlap sets what a tick does while the last tick's job is unfinished
// (default OverlapSkip).
func Overlap(p bananastype.Overlap) ScheduleOption {
	return scheduleOption(func(c *scheduleConfig) { c.def.Overlap = p })
}

// CatchUp sets how far back missed ticks run after an outage (no scheduler
// ran): each tick inside d runs once, oldest first. Default none: only a
// tick at most scheduler.Late late runs.
func CatchUp(d time.Duration) ScheduleOption {
	return scheduleOption(func(c *scheduleConfig) { c.def.CatchUp = d })
}

// StartAt makes a schedule's first tick no earlier than t.
func StartAt(t time.Time) ScheduleOption {
	return scheduleOption(func(c *scheduleConfig) { c.def.Start = t })
}

// EndAt makes a schedule fire no tick after t.
func EndAt(t time.Time) ScheduleOption {
	return scheduleOption(func(c *scheduleConfig) { c.def.End = t })
}

// ErrNoSchedule is the error (errors.Is) of an action on a schedule that
// does not exist.
var ErrNoSchedule = scheduler.ErrNoSchedule

// Schedule creates schedule id, or changes it: a job of t with args at each
// tick of the spec (Every, required). Any number of processes may put the
// same schedule at once; one schedule results, and each tick enqueues one
// job however many schedulers run. Options that
// place a single job (Delay, At, WithID, Unique, Key) are refused.
func (t *Task[A, R]) Schedule(ctx context.Context, id string, args A, opts ...ScheduleOption) error {
	c, err := t.clientOrDefault()
	if err != nil {
		return err
	}
	var sc scheduleConfig
	for _, o := range opts {
		o.applySchedule(&sc)
	}
	if sc.def.Spec == "" {
		return fmt.Errorf("bananas: schedule %s of %s: no spec: pass runtime.Every(spec)", id, t.name)
	}
	cfg, err := t.config(sc.opts)
	if err != nil {
		return fmt.Errorf("bananas: schedule %s of %s: %w", id, t.name, err)
	}
	if cfg.id != "" || cfg.delay != 0 || !cfg.runAt.IsZero() || cfg.uniqueTTL > 0 || cfg.hasKey {
		return fmt.Errorf("bananas: schedule %s of %s: Delay, At, WithID, Unique and Key place one job and do not apply to a schedule", id, t.name)
	}
	cfg.unsharded, cfg.everyTick = true, true
	now := c.q.Now()
	job, err := t.newJob(c, cfg, args, now, time.Time{})
	if err != nil {
		return err
	}
	shown, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("bananas: schedule %s of %s: args as JSON: %w", id, t.name, err)
	}
	d := sc.def
	d.ID, d.Name, d.Route, d.Priority = id, t.name, cfg.route, cfg.priority
	d.Envelope, d.MaxRetries = job.Envelope, job.MaxRetries
	if d.Args, err = c.sealScheduleJSON(id, string(shown)); err != nil {
		return fmt.Errorf("bananas: schedule %s of %s: %w", id, t.name, err)
	}
	if _, err := c.schedules().Put(ctx, d, now); err != nil {
		return fmt.Errorf("bananas: %w", err)
	}
	return nil
}

func (c *Client) schedules() *scheduler.Schedules { return &scheduler.Schedules{Queue: c.q} }

// Schedules lists the schedules made at run time, in id order, each with
// whether a live worker registers its task (Registered).
func (c *Client) Schedules(ctx context.Context) ([]bananastype.Schedule, error) {
	list, err := c.schedules().List(ctx)
	if err != nil {
		return nil, err
	}
	reg, err := c.registeredTasks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]bananastype.Schedule, len(list))
	for i, sc := range list {
		out[i] = sc.View()
		out[i].Registered = reg[sc.Name]
		c.openSchedule(&out[i])
	}
	return out, nil
}

// Schedule reads schedule id (errors.Is ErrNoSchedule when there is none).
func (c *Client) Schedule(ctx context.Context, id string) (bananastype.Schedule, error) {
	sc, err := c.schedules().Get(ctx, id)
	if err != nil {
		return bananastype.Schedule{}, err
	}
	reg, err := c.registeredTasks(ctx)
	if err != nil {
		return bananastype.Schedule{}, err
	}
	v := sc.View()
	v.Registered = reg[sc.Name]
	c.openSchedule(&v)
	return v, nil
}

// registeredTasks are the tasks live workers register, from their
// heartbeats.
func (c *Client) registeredTasks(ctx context.Context) (map[string]bool, error) {
	ws, err := worker.Live(ctx, c.q)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, w := range ws {
		for _, t := range w.Tasks {
			out[t] = true
		}
	}
	return out, nil
}

// PauseSchedule pauses schedule id: it fires nothing, and keeps its next
// tick, until ResumeSchedule.
func (c *Client) PauseSchedule(ctx context.Context, id string) error {
	return c.schedules().Pause(ctx, id, true, c.q.Now())
}

// ResumeSchedule resumes schedule id from its next tick (a tick missed
// while it was paused runs as its catch-up window allows).
func (c *Client) ResumeSchedule(ctx context.Context, id string) error {
	return c.schedules().Pause(ctx, id, false, c.q.Now())
}

// DeleteSchedule deletes schedule id: it fires nothing more.
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	return c.schedules().Delete(ctx, id)
}

// scheduleRunner fires due schedules made at run time: every worker runs
// one (runtime/internal/worker), active while it keeps a route (each tick is
// enqueued once however many are).
func (w *Worker) scheduleRunner() *scheduler.ScheduleRunner {
	r := &scheduler.ScheduleRunner{
		Schedules: w.c.schedules(),
		// Not SafetyPoll, the fetcher's: a put is indexed at once, and the
		// loop sleeps only until the earliest due schedule.
		Safety: scheduler.DefaultScheduleSafety,
		Outage: scheduler.NewOutageLog(w.opts.Logger, "schedules"),
		Cancel: func(ctx context.Context, id string) error {
			// A job that ended or went meanwhile needs no cancel.
			_, err := w.c.cancelJob(ctx, id)
			if errors.Is(err, queue.ErrNotFound) || errors.Is(err, admin.ErrWrongState) || errors.Is(err, queue.ErrWrongState) {
				return nil
			}
			return err
		},
		OnFire: func(sc scheduler.Schedule, tick time.Time, id string) {
			w.opts.Logger.Debug("bananas: schedule fired", "schedule", sc.ID, "tick", tick.Format(time.RFC3339Nano), "job", id)
		},
		OnSkip: func(sc scheduler.Schedule, tick time.Time) {
			w.c.metrics.ScheduleSkipped(sc.Name)
			w.opts.Logger.Info("bananas: schedule tick skipped: the last tick's job is unfinished", "schedule", sc.ID, "tick", tick.Format(time.RFC3339Nano), "last_job", sc.LastJob)
		},
		OnError: func(id string, err error) {
			w.opts.Logger.Warn("bananas: schedule fire failed", "schedule", id, "err", err)
		},
	}
	return r
}
