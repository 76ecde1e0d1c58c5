package runtime

import (
	"encoding/json"
	"time"
)

// The JSON shapes of the HTTP API and of every command's --json, one
// convention (docs/OPERATIONS.md): snake_case
// keys; times in RFC 3339, UTC, or null when unset (never Go's zero time);
// durations as whole milliseconds in keys ending in _ms; args and results as
// the JSON of their Go types, decoded by the task's generated code.

// jsonTime is a time in --json output.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(time.Time(t).UTC().Format(time.RFC3339Nano))
}

// jobJSON is `job ID --json`: a listing's fields of the job, and what a
// listing leaves out.
type jobJSON struct {
	jobSummaryJSON
	TimeoutMS int64           `json:"timeout_ms"`
	StartedAt jsonTime        `json:"started_at"`
	FailedAt  []jsonTime      `json:"failed_at"` // when its last failed runs ended, oldest first; [] when none
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result"`
}

// jobView is info as --json and the API show it, its args and result
// decoded by the task's generated code (null when no task of that name is
// registered in this program).
func (in *Inspector) jobView(info *JobInfo) jobJSON {
	v := jobJSON{jobSummaryJSON: summaryView(*info), TimeoutMS: info.Timeout.Milliseconds(), StartedAt: jsonTime(info.StartedAt),
		FailedAt: views(info.FailedAt, func(t time.Time) jsonTime { return jsonTime(t) })}
	v.Args, v.Result = in.JSON(info)
	return v
}

// cronJSON is one entry of `cron list --json`.
type cronJSON struct {
	Name      string   `json:"name"`
	Route     string   `json:"route"`
	Priority  Priority `json:"priority"`
	Spec      string   `json:"spec"`
	TZ        string   `json:"tz,omitempty"`
	LastRun   jsonTime `json:"last_run"`
	NextRun   jsonTime `json:"next_run"`
	RunCount  int64    `json:"run_count"`
	LastJob   string   `json:"last_job,omitempty"`
	LastError string   `json:"last_error,omitempty"`
}

func cronView(s CronStatus) cronJSON {
	return cronJSON{Name: s.Name, Route: s.Route, Priority: s.Priority, Spec: s.Spec, TZ: s.TZ,
		LastRun: jsonTime(s.LastRun), NextRun: jsonTime(s.NextRun), RunCount: s.RunCount, LastJob: s.LastJob, LastError: s.LastError}
}

// views maps each element of xs through f, into an empty list (not null)
// when there is none.
func views[T, V any](xs []T, f func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// routeJSON is one route of `queues --json` and GET /api/v1/queues.
type routeJSON struct {
	Route            string   `json:"route"`
	High             int64    `json:"high"`
	Normal           int64    `json:"normal"`
	Low              int64    `json:"low"`
	Pending          int64    `json:"pending"`
	Scheduled        int64    `json:"scheduled"`
	Active           int64    `json:"active"`
	Dead             int64    `json:"dead"`
	Paused           bool     `json:"paused"`
	OldestPendingAt  jsonTime `json:"oldest_pending_at"`
	OldestPendingAge int64    `json:"oldest_pending_age_ms"`
	Workers          int      `json:"workers"`
}

func routeView(r RouteInfo) routeJSON {
	v := routeJSON{Route: r.Route, High: r.High, Normal: r.Normal, Low: r.Low, Pending: r.Pending(), Scheduled: r.Scheduled,
		Active: r.Active, Dead: r.Dead, Paused: r.Paused, OldestPendingAt: jsonTime(r.OldestPending), Workers: r.Workers}
	if !r.OldestPending.IsZero() {
		v.OldestPendingAge = r.OldestPendingAge.Milliseconds()
	}
	return v
}

// taskJSON is one task of GET /api/v1/tasks: its annotation and its args.
type taskJSON struct {
	Name       string    `json:"name"`
	Route      string    `json:"route"`
	Priority   Priority  `json:"priority"`
	MaxRetries int       `json:"max_retries"`
	TimeoutMS  int64     `json:"timeout_ms"`
	UniqueMS   int64     `json:"unique_ms,omitempty"`
	BackoffMS  int64     `json:"backoff_ms,omitempty"`
	ArgsType   string    `json:"args_type,omitempty"`
	Args       []Field   `json:"args"`
	Result     string    `json:"result,omitempty"`
	Cron       *cronSpec `json:"cron,omitempty"`
}

type cronSpec struct {
	Spec string `json:"spec"`
	TZ   string `json:"tz,omitempty"`
}

func taskView(t TaskInfo) taskJSON {
	v := taskJSON{Name: t.Name, Route: t.Route, Priority: t.Priority, MaxRetries: t.Retries, TimeoutMS: t.Timeout.Milliseconds(),
		UniqueMS: t.Unique.Milliseconds(), BackoffMS: t.Backoff.Milliseconds(), ArgsType: t.ArgsType, Args: t.Args, Result: t.Result}
	if v.Args == nil {
		v.Args = []Field{}
	}
	if t.Cron != nil {
		v.Cron = &cronSpec{Spec: t.Cron.Spec, TZ: t.Cron.TZ}
	}
	return v
}

// pageJSON is a page of a listing: `jobs --json` and GET /api/v1/jobs.
type pageJSON struct {
	Jobs []jobSummaryJSON `json:"jobs"`
	Next string           `json:"next"` // "" at the end
}

// jobSummaryJSON is a job in a listing: a job's fields without args and result.
type jobSummaryJSON struct {
	ID            string   `json:"id"`
	Task          string   `json:"task"`
	Route         string   `json:"route"`
	Priority      Priority `json:"priority"`
	Status        Status   `json:"status"`
	Description   string   `json:"description,omitempty"`
	Attempts      int      `json:"attempts"` // runs started that count (JobInfo.Attempts)
	Retries       int      `json:"retries"`  // of those, the runs after the first: at most max_retries
	MaxRetries    int      `json:"max_retries"`
	Error         string   `json:"error,omitempty"`
	CreatedAt     jsonTime `json:"created_at"`
	ScheduledAt   jsonTime `json:"scheduled_at"`
	FinishedAt    jsonTime `json:"finished_at"`
	LeaseDeadline jsonTime `json:"lease_deadline"`
}

func (in *Inspector) pageView(p JobPage) pageJSON {
	return pageJSON{Next: p.Next, Jobs: views(p.Jobs, summaryView)}
}

func summaryView(j JobInfo) jobSummaryJSON {
	return jobSummaryJSON{
		ID: j.ID, Task: j.Name, Route: j.Route, Priority: j.Priority, Status: j.Status, Description: j.Description,
		Attempts: j.Attempts, Retries: j.Retries(), MaxRetries: j.MaxRetries, Error: j.Error, CreatedAt: jsonTime(j.CreatedAt),
		ScheduledAt: jsonTime(j.ScheduledAt), FinishedAt: jsonTime(j.FinishedAt), LeaseDeadline: jsonTime(j.LeaseDeadline),
	}
}
