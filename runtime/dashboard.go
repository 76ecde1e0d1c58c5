package runtime

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/dashboard"
)

// dashboardRoutes is the dashboard of in (GET / and its pages), as mux
// patterns to mount beside the API: every process that serves the API serves
// the dashboard, with the same token and read-only mode.
func dashboardRoutes(in *Inspector, o APIOptions) map[string]http.Handler {
	d := dashboard.New(dashboardBackend{in}, dashboard.Config{Token: o.Token, ReadOnly: o.ReadOnly, Logger: o.Logger})
	out := map[string]http.Handler{}
	for _, p := range d.Patterns() {
		out[p] = d
	}
	return out
}

// dashboardBackend answers the dashboard from the admin layer, in the
// dashboard's own view structs.
type dashboardBackend struct{ in *Inspector }

func (b dashboardBackend) Routes(ctx context.Context) ([]dashboard.Route, error) {
	routes, err := b.in.Routes(ctx)
	return admin.Map(routes, func(r RouteInfo) dashboard.Route {
		return dashboard.Route{Name: r.Route, High: r.High, Normal: r.Normal, Low: r.Low, Scheduled: r.Scheduled, Active: r.Active,
			Dead: r.Dead, Paused: r.Paused, OldestPendingAge: r.OldestPendingAge, Workers: r.Workers}
	}), err
}

func (b dashboardBackend) Jobs(ctx context.Context, q dashboard.JobQuery) (dashboard.JobPage, error) {
	page, err := b.in.Jobs(ctx, JobQuery{Route: q.Route, State: Status(q.State), Task: q.Task, Text: q.Text, Cursor: q.Cursor, Newest: q.State == string(StatusFailed)})
	if err != nil {
		return dashboard.JobPage{}, dashboardError(err)
	}
	return dashboard.JobPage{Next: page.Next, Jobs: admin.Map(page.Jobs, func(j JobInfo) dashboard.Job { return dashboardJob(&j) })}, nil
}

func (b dashboardBackend) Job(ctx context.Context, id string) (*dashboard.Job, error) {
	info, err := b.in.Job(ctx, id)
	if err != nil {
		return nil, dashboardError(err)
	}
	j := dashboardJob(info)
	j.Args, j.Result = b.in.JSON(info)
	return &j, nil
}

func dashboardJob(j *JobInfo) dashboard.Job {
	return dashboard.Job{ID: j.ID, Task: j.Name, Route: j.Route, Priority: string(j.Priority), Status: string(j.Status),
		Description: j.Description, Attempts: j.Attempts, Retries: j.Retries(), MaxRetries: j.MaxRetries, Timeout: j.Timeout, Error: j.Error,
		Created: j.CreatedAt, Scheduled: j.ScheduledAt, Started: j.StartedAt, Finished: j.FinishedAt, LeaseDeadline: j.LeaseDeadline,
		Failed: j.FailedAt, Earlier: admin.Map(j.Earlier, func(l EarlierLife) dashboard.Life {
			return dashboard.Life{FirstRun: l.FirstRun, Attempts: l.Attempts, Failed: l.FailedAt, Started: l.Started, Died: l.Died,
				Replayed: l.Replayed, Error: l.Error}
		})}
}

func (b dashboardBackend) Tasks(context.Context) ([]dashboard.Task, error) {
	return admin.Map(b.in.Tasks(), func(t TaskInfo) dashboard.Task {
		v := dashboard.Task{Name: t.Name, Route: t.Route, Priority: string(t.Priority), Retries: t.Retries, Timeout: t.Timeout,
			ArgsType: t.ArgsType, Result: t.Result,
			Args: admin.Map(t.Args, func(f Field) dashboard.Field { return dashboard.Field{Name: f.Name, JSON: f.JSON, Type: f.Type} })}
		if t.Cron != nil {
			v.Cron = t.Cron.Spec
			if t.Cron.TZ != "" {
				v.Cron += " (" + t.Cron.TZ + ")"
			}
		}
		return v
	}), nil
}

func (b dashboardBackend) Cron(ctx context.Context) ([]dashboard.CronEntry, error) {
	entries, err := b.in.Cron(ctx)
	return admin.Map(entries, func(s CronStatus) dashboard.CronEntry {
		return dashboard.CronEntry{Task: s.Name, Route: s.Route, Spec: s.Spec, TZ: s.TZ, LastRun: s.LastRun, NextRun: s.NextRun,
			RunCount: s.RunCount, LastJob: s.LastJob, LastError: s.LastError}
	}), err
}

func (b dashboardBackend) Workers(ctx context.Context) ([]dashboard.Worker, error) {
	ws, err := b.in.Workers(ctx)
	return admin.Map(ws, func(w WorkerState) dashboard.Worker {
		return dashboard.Worker{ID: w.ID, Host: w.Host, Mode: w.Mode, PID: w.PID, Routes: w.Routes, Concurrency: w.Concurrency,
			InFlight: w.InFlight, Started: w.Started, LastBeat: w.LastBeat}
	}), err
}

func (b dashboardBackend) Replay(ctx context.Context, id string) error {
	return dashboardError(b.in.Replay(ctx, id))
}

func (b dashboardBackend) Delete(ctx context.Context, id string) error {
	return dashboardError(b.in.Delete(ctx, id))
}

func (b dashboardBackend) Cancel(ctx context.Context, id string) (string, error) {
	st, err := b.in.Cancel(ctx, id)
	return string(st), dashboardError(err)
}

func (b dashboardBackend) Pause(ctx context.Context, route string) error {
	return dashboardError(b.in.Pause(ctx, route))
}

func (b dashboardBackend) Resume(ctx context.Context, route string) error {
	return dashboardError(b.in.Resume(ctx, route))
}

func (b dashboardBackend) PurgeDead(ctx context.Context, route string) (int, error) {
	n, err := b.in.PurgeDead(ctx, route, "", 0)
	return n, dashboardError(err)
}

func (b dashboardBackend) RunCron(ctx context.Context, name string) (string, error) {
	id, err := b.in.RunCron(ctx, name)
	return id, dashboardError(err)
}

// dashboardError gives the admin layer's refusals the status the operator
// sees; the rest are failures of the server or of Redis.
func dashboardError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrJobNotFound), errors.Is(err, ErrUnknownCron), errors.Is(err, ErrUnknownRoute):
		return dashboard.NotFound(trimBananas(err))
	case errors.Is(err, ErrDuplicate), errors.Is(err, ErrWrongState):
		return &dashboard.Problem{Status: http.StatusConflict, Msg: trimBananas(err)}
	case errors.Is(err, ErrBadQuery), errors.Is(err, ErrUnknownTask):
		return &dashboard.Problem{Status: http.StatusBadRequest, Msg: trimBananas(err)}
	}
	return err
}

func (b dashboardBackend) Stats(ctx context.Context, window time.Duration) (dashboard.Stats, error) {
	st, err := b.in.Stats(ctx, window)
	if err != nil {
		return dashboard.Stats{}, dashboardError(err)
	}
	return dashboard.Stats{Window: st.Window, Points: admin.Map(st.Points, func(p StatsPoint) dashboard.StatsPoint {
		return dashboard.StatsPoint{At: p.At, Enqueued: p.Enqueued, Processed: p.Processed, Failed: p.Failed,
			WaitP50: p.WaitP50, WaitP99: p.WaitP99, RunP50: p.RunP50, RunP99: p.RunP99}
	})}, nil
}

func (b dashboardBackend) ReplayDead(ctx context.Context, route string) (int, error) {
	n, err := b.in.ReplayDead(ctx, route, "")
	return n, dashboardError(err)
}

// ArgsSchemas is the JSON Schema of each registered task's args type.
func (b dashboardBackend) ArgsSchemas(context.Context) (map[string][]byte, error) {
	schemas, err := b.in.ArgsSchemas()
	out := make(map[string][]byte, len(schemas))
	for k, v := range schemas {
		out[k] = v
	}
	return out, err
}
