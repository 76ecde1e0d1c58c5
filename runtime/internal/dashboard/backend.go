package dashboard

import (
	"context"
	"net/http"
	"time"
)

// Backend reads and acts for the dashboard. An error that is a *Problem is
// shown to the operator with its status (a job that moved, a bad filter);
// any other is a failure of the server or of Redis, logged and shown as a
// 500.
type Backend interface {
	Routes(ctx context.Context) ([]Route, error)
	Jobs(ctx context.Context, q JobQuery) (JobPage, error)
	Job(ctx context.Context, id string) (*Job, error)
	Tasks(ctx context.Context) ([]Task, error)
	Cron(ctx context.Context) ([]CronEntry, error)
	Workers(ctx context.Context) ([]Worker, error)
	// Stats is the per-minute history of the last window (1h or 24h).
	Stats(ctx context.Context, window time.Duration) (Stats, error)

	Replay(ctx context.Context, id string) error
	Delete(ctx context.Context, id string) error
	// Cancel returns the job's status after the cancel: canceled, or
	// processing while the worker holding it has yet to act.
	Cancel(ctx context.Context, id string) (status string, err error)
	Pause(ctx context.Context, route string) error
	Resume(ctx context.Context, route string) error
	PurgeDead(ctx context.Context, route string) (int, error)
	// ReplayDead replays every failed job of route and says how many.
	ReplayDead(ctx context.Context, route string) (int, error)
	// RunCron enqueues one job of cron entry name now, leaving its schedule
	// alone, and returns the job's id.
	RunCron(ctx context.Context, name string) (id string, err error)
	// ArgsSchemas is each registered task's args JSON Schema (JSON), by
	// task name; a task missing from it shows none.
	ArgsSchemas(ctx context.Context) (map[string][]byte, error)
}

// Problem is an error the operator caused or can act on, shown as it is.
type Problem struct {
	Status int
	Msg    string
}

func (p *Problem) Error() string { return p.Msg }

// NotFound is a 404 Problem.
func NotFound(msg string) *Problem { return &Problem{Status: http.StatusNotFound, Msg: msg} }

// Route is one route of the overview.
type Route struct {
	Name              string
	High, Normal, Low int64 // pending, by priority
	Scheduled         int64
	Active            int64
	Dead              int64
	Paused            bool
	OldestPendingAge  time.Duration // 0 when nothing is pending
	Workers           int           // live workers that take the route
}

// Pending is the route's ready jobs of every priority.
func (r Route) Pending() int64 { return r.High + r.Normal + r.Low }

// JobQuery selects a page of the job list; every field comes from the
// query string, so a listing is a shareable link.
type JobQuery struct {
	Route, State, Task, Text, Cursor string
}

// JobPage is a page of the job list.
type JobPage struct {
	Jobs []Job // without Args and Result
	Next string
}

// Job is a job as the dashboard shows it.
type Job struct {
	ID, Task, Route, Priority, Status string
	Description                       string
	// Attempts are the runs started that count, the one running included;
	// Retries those after the first, out of MaxRetries.
	Attempts, Retries, MaxRetries int
	Timeout                       time.Duration
	Error                         string
	Created, Scheduled, Started   time.Time
	Finished, LeaseDeadline       time.Time
	// Failed holds when its last failed runs ended, oldest first (see
	// failedRuns for the number of the first).
	Failed []time.Time
	// Earlier are the lives it had before it was replayed, oldest first.
	Earlier []Life
	// Args and Result are JSON (null when the task is not registered in
	// this program or there is none).
	Args, Result []byte
}

// Life is a life a job had before it was replayed from the dead-letter
// queue: runs FirstRun to FirstRun+Attempts-1, all failed.
type Life struct {
	FirstRun, Attempts      int
	Failed                  []time.Time // when its last failed runs ended, oldest first
	Started, Died, Replayed time.Time
	Error                   string // its last failure
}

// Task is a registered task and its annotation.
type Task struct {
	Name, Route, Priority string
	Retries               int
	Timeout               time.Duration
	ArgsType, Result      string
	Args                  []Field
	Cron                  string // spec and time zone, "" when none
}

// Field is one field of a task's args.
type Field struct{ Name, JSON, Type string }

// CronEntry is a cron entry's spec and state.
type CronEntry struct {
	Task, Route, Spec, TZ string
	LastRun, NextRun      time.Time
	RunCount              int64
	LastJob, LastError    string
}

// Worker is a live worker, from its heartbeat.
type Worker struct {
	ID, Host, Mode        string
	PID                   int
	Routes                []string
	Concurrency, InFlight int
	Started, LastBeat     time.Time
}
