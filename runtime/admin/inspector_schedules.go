package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/scheduler"
)

// ErrUnknownSchedule: no schedule of that id (scheduler.ErrNoSchedule).
var ErrUnknownSchedule = scheduler.ErrNoSchedule

// ErrCodeSchedule: an id that names a cron entry of the code, which is
// listed, paused, resumed and run with the schedules but changed and
// deleted only in code.
var ErrCodeSchedule = errors.New("bananas: a cron entry of the code")

// codeEntry refuses an action that would change id when id names a cron
// entry of the program.
func (in *Inspector) codeEntry(id, action string) error {
	if _, err := in.rt.CronJob(id, in.q.Now()); err != nil {
		return nil
	}
	return fmt.Errorf("%w: %s is a //bananas:cron entry, changed in code and not by %s (pause or resume it instead)", ErrCodeSchedule, id, action)
}

// codeSchedules are the program's cron entries (Source code), each with
// whether it is paused.
func (in *Inspector) codeSchedules(ctx context.Context) ([]bananastype.Schedule, error) {
	return in.rt.Cron(ctx)
}

// codeSchedule is the program's cron entry id as a schedule, false when
// there is none.
func (in *Inspector) codeSchedule(ctx context.Context, id string) (bananastype.Schedule, bool, error) {
	if in.codeEntry(id, "") == nil {
		return bananastype.Schedule{}, false, nil
	}
	all, err := in.codeSchedules(ctx)
	if err != nil {
		return bananastype.Schedule{}, false, err
	}
	for _, s := range all {
		if s.ID == id {
			return s, true, nil
		}
	}
	return bananastype.Schedule{}, false, nil
}

// ScheduleActions list and act on schedules: those made at run time
// (Source data), and the program's cron entries (Source code: listed,
// read, paused, resumed and run here, changed and deleted only in code).
type ScheduleActions interface {
	Schedules(ctx context.Context) ([]bananastype.Schedule, error)
	// Schedule reads schedule id, made at run time or a cron entry of the
	// code (ErrUnknownSchedule).
	Schedule(ctx context.Context, id string) (bananastype.Schedule, error)
	// PutSchedule creates schedule id or changes it; a bad field is a
	// refusal naming it (args through the task's strict decoder).
	PutSchedule(ctx context.Context, id string, s ScheduleSubmission) (bananastype.Schedule, error)
	DeleteSchedule(ctx context.Context, id string) error
	// PauseSchedule pauses (paused) or resumes schedule id.
	PauseSchedule(ctx context.Context, id string, paused bool) error
	// RunSchedule enqueues one job of schedule id now, outside its ticks.
	RunSchedule(ctx context.Context, id string) (string, error)
	// BackfillSchedule enqueues the job of each tick of schedule id in
	// [from, to] before its next tick, oldest first, each once even if
	// asked twice; it returns the ids enqueued by this call.
	BackfillSchedule(ctx context.Context, id string, from, to time.Time) ([]string, error)
}

// ScheduleSubmission is a schedule as PUT /api/v1/schedules/{id} takes it.
type ScheduleSubmission struct {
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Route    string          `json:"route,omitempty"`
	Priority string          `json:"priority,omitempty"`
	Cron     string          `json:"cron"`
	TZ       string          `json:"tz,omitempty"`
	Jitter   string          `json:"jitter,omitempty"`   // a Go duration
	Overlap  string          `json:"overlap,omitempty"`  // skip (default), buffer_one, allow, cancel_running
	CatchUp  string          `json:"catch_up,omitempty"` // a Go duration
	Paused   bool            `json:"paused,omitempty"`
	Start    *time.Time      `json:"start,omitempty"`
	End      *time.Time      `json:"end,omitempty"`
}

func (in *Inspector) schedules() *scheduler.Schedules { return &scheduler.Schedules{Queue: in.q} }

// Schedules lists the schedules made at run time, in id order, then the
// program's cron entries.
func (in *Inspector) Schedules(ctx context.Context) ([]bananastype.Schedule, error) {
	list, err := in.schedules().List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]bananastype.Schedule, 0, len(list))
	for _, sc := range list {
		out = append(out, sc.View())
	}
	code, err := in.codeSchedules(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, code...)
	return out, in.describeSchedules(ctx, out)
}

// Schedule reads schedule id, made at run time or a cron entry of the code.
func (in *Inspector) Schedule(ctx context.Context, id string) (bananastype.Schedule, error) {
	if err := scheduler.CheckScheduleID(id); err != nil {
		return bananastype.Schedule{}, InvalidValue("id", id, "1-200 characters without spaces or braces")
	}
	sc, err := in.schedules().Get(ctx, id)
	var out []bananastype.Schedule
	switch {
	case errors.Is(err, ErrUnknownSchedule):
		code, ok, cerr := in.codeSchedule(ctx, id)
		if cerr != nil {
			return bananastype.Schedule{}, cerr
		}
		if !ok {
			return bananastype.Schedule{}, err
		}
		out = []bananastype.Schedule{code}
	case err != nil:
		return bananastype.Schedule{}, err
	default:
		out = []bananastype.Schedule{sc.View()}
	}
	return out[0], in.describeSchedules(ctx, out)
}

// describeSchedules fills each schedule's last job's status (one
// pipelined read), whether its task is registered here, and whether a live
// worker registers it (the workers' heartbeats list their tasks).
func (in *Inspector) describeSchedules(ctx context.Context, scs []bananastype.Schedule) error {
	for i := range scs {
		in.openSchedule(&scs[i])
	}
	ws, err := in.rt.Workers(ctx)
	if err != nil {
		return err
	}
	registered := map[string]bool{}
	for _, w := range ws {
		for _, t := range w.Tasks {
			registered[t] = true
		}
	}
	var ids []string
	var at []int
	for i := range scs {
		if _, ok := in.rt.Task(scs[i].Name); !ok {
			scs[i].Unregistered = true
		}
		scs[i].Registered = registered[scs[i].Name]
		if scs[i].LastJob != "" {
			ids, at = append(ids, scs[i].LastJob), append(at, i)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	states, err := in.q.Jobs.LookupMany(ctx, ids)
	if err != nil {
		return err
	}
	for k, st := range states {
		if st != nil {
			scs[at[k]].LastJobStatus = st.Status
		}
	}
	return nil
}

// PutSchedule checks s and puts schedule id.
func (in *Inspector) PutSchedule(ctx context.Context, id string, s ScheduleSubmission) (bananastype.Schedule, error) {
	if err := scheduler.CheckScheduleID(id); err != nil {
		return bananastype.Schedule{}, InvalidValue("id", id, "1-200 characters without spaces or braces")
	}
	if err := in.codeEntry(id, "a put"); err != nil {
		return bananastype.Schedule{}, err
	}
	d := scheduler.ScheduleDef{ID: id, Spec: s.Cron, TZ: s.TZ, Paused: s.Paused, Overlap: bananastype.Overlap(s.Overlap)}
	if s.Cron == "" {
		return bananastype.Schedule{}, Invalid("cron", "cron: required: five cron fields, six with seconds, or a descriptor such as @every 1s")
	}
	if _, err := scheduler.ParseScheduleSpec(s.Cron, "", time.Time{}, time.Time{}); err != nil {
		return bananastype.Schedule{}, InvalidValue("cron", s.Cron, "want five cron fields, six with seconds, or a descriptor such as @every 1s")
	}
	if _, err := scheduler.ParseScheduleSpec(s.Cron, s.TZ, time.Time{}, time.Time{}); err != nil {
		return bananastype.Schedule{}, InvalidValue("tz", s.TZ, "want an IANA time zone such as Europe/Berlin")
	}
	for _, f := range []struct {
		name, v string
		to      *time.Duration
	}{{"jitter", s.Jitter, &d.Jitter}, {"catch_up", s.CatchUp, &d.CatchUp}} {
		if f.v == "" {
			continue
		}
		v, err := time.ParseDuration(f.v)
		if err != nil || v < 0 {
			return bananastype.Schedule{}, InvalidValue(f.name, f.v, "want a Go duration such as 30s")
		}
		*f.to = v
	}
	if d.Overlap != "" && !d.Overlap.Valid() {
		return bananastype.Schedule{}, InvalidValue("overlap", s.Overlap, "use skip, buffer_one, allow or cancel_running")
	}
	if s.Start != nil {
		d.Start = *s.Start
	}
	if s.End != nil {
		d.End = *s.End
	}
	if !d.Start.IsZero() && !d.End.IsZero() && !d.End.After(d.Start) {
		return bananastype.Schedule{}, Invalid("end", "end: must come after start")
	}
	bj, err := in.rt.BatchJob(Submission{Name: s.Name, Args: s.Args, Route: s.Route, Priority: s.Priority}, nil, map[string]string{})
	if err != nil {
		return bananastype.Schedule{}, err
	}
	d.Name, d.Route, d.Priority = bj.Name, bj.Route, bj.Priority
	d.Envelope, d.MaxRetries = bj.Job.Envelope, bj.Job.MaxRetries
	if len(s.Args) > 0 {
		var b bytes.Buffer
		if json.Compact(&b, s.Args) == nil {
			d.Args = b.String()
		}
	}
	if err := in.sealSchedule(&d, bj.Job.ID); err != nil {
		return bananastype.Schedule{}, err
	}
	sc, err := in.schedules().Put(ctx, d, in.q.Now())
	if err != nil {
		return bananastype.Schedule{}, err
	}
	v := sc.View()
	in.openSchedule(&v)
	return v, nil
}

// DeleteSchedule deletes schedule id: it fires nothing more.
func (in *Inspector) DeleteSchedule(ctx context.Context, id string) error {
	if err := scheduler.CheckScheduleID(id); err != nil {
		return InvalidValue("id", id, "1-200 characters without spaces or braces")
	}
	if err := in.codeEntry(id, "a delete"); err != nil {
		return err
	}
	return in.schedules().Delete(ctx, id)
}

// PauseSchedule pauses or resumes schedule id, made at run time or a cron
// entry of the code: paused, it fires nothing on any scheduler and keeps
// its next tick.
func (in *Inspector) PauseSchedule(ctx context.Context, id string, paused bool) error {
	if err := scheduler.CheckScheduleID(id); err != nil {
		return InvalidValue("id", id, "1-200 characters without spaces or braces")
	}
	if e, err := in.rt.CronJob(id, in.q.Now()); err == nil {
		return scheduler.PauseCron(ctx, in.q, e.Route, id, paused, in.q.Now())
	}
	return in.schedules().Pause(ctx, id, paused, in.q.Now())
}

// RunSchedule enqueues one job of schedule id now.
func (in *Inspector) RunSchedule(ctx context.Context, id string) (string, error) {
	if err := scheduler.CheckScheduleID(id); err != nil {
		return "", InvalidValue("id", id, "1-200 characters without spaces or braces")
	}
	job, err := in.schedules().RunNow(ctx, id)
	if errors.Is(err, ErrUnknownSchedule) && in.codeEntry(id, "") != nil {
		return in.RunCron(ctx, id) // a cron entry of the code runs as `cron run` runs it
	}
	return job, err
}

// BackfillSchedule enqueues the ticks of schedule id in [from, to].
func (in *Inspector) BackfillSchedule(ctx context.Context, id string, from, to time.Time) ([]string, error) {
	if err := scheduler.CheckScheduleID(id); err != nil {
		return nil, InvalidValue("id", id, "1-200 characters without spaces or braces")
	}
	if from.IsZero() {
		return nil, Invalid("from", "from: required, an RFC 3339 time")
	}
	if to.IsZero() {
		return nil, Invalid("to", "to: required, an RFC 3339 time")
	}
	if to.Before(from) {
		return nil, Invalid("to", "to: must not come before from")
	}
	ids, err := in.schedules().Backfill(ctx, id, from, to)
	if errors.Is(err, scheduler.ErrBadRange) {
		return nil, Invalid("to", "%s", err.Error())
	}
	return ids, err
}
