package cli

import (
	"context"
	"encoding/json"
	"time"
)

// App is what Run needs from the program: its configuration, checked before
// any command runs, a Backend for the admin commands, and the commands it
// adds (worker, scheduler, api).
type App interface {
	// Configure reads the configuration; an error is a usage error (exit
	// 2), printed after "configuration:".
	Configure() error
	// Open connects to Redis with the configuration: the admin commands'
	// Backend, closed when the command ends.
	Open(ctx context.Context) (Backend, error)
	// Commands are the program's own commands, by name.
	Commands() map[string]Command
	// Environment are the configuration variables, for the help.
	Environment() []EnvVar
}

// EnvVar is one configuration variable and what it sets.
type EnvVar struct{ Name, Help string }

// Command runs one command with its arguments (after its name).
type Command func(e *Env, args []string) error

// Backend answers the admin commands. An error wrapped by Usage is a usage
// error (exit 2); any other is a failure (exit 1). Each value with JSON has
// it as the API shows it: the --json convention is the API's.
type Backend interface {
	// Tasks are the registered task names, sorted; RouteOf a task's route.
	Tasks() []string
	RouteOf(task string) string
	// Enqueue enqueues task with its args as JSON; route and priority ""
	// take the task's.
	Enqueue(ctx context.Context, task string, args []byte, route, priority string, delay time.Duration) (id string, err error)
	// Await waits for job id of task and returns its result's JSON value
	// (nil for a task without one).
	Await(ctx context.Context, task, id string) (any, error)
	// Takers counts the live workers taking each route; Embedded says the
	// program's Redis is its own in-memory server (mem://).
	Takers(ctx context.Context) (map[string]int, error)
	Embedded() bool
	Job(ctx context.Context, id string) (Job, error)
	Jobs(ctx context.Context, q JobQuery) (Page, error)
	// Cancel cancels job id; running says the worker holding it has yet to
	// act.
	Cancel(ctx context.Context, id string) (running bool, err error)
	Delete(ctx context.Context, id string) error
	Pause(ctx context.Context, route string) error
	Resume(ctx context.Context, route string) error
	Routes(ctx context.Context) ([]Route, any, error)
	Replay(ctx context.Context, id string) error
	ReplayDead(ctx context.Context, route, task string) (int, error)
	PurgeDead(ctx context.Context, route, task string, olderThan time.Duration) (int, error)
	Cron(ctx context.Context) ([]CronEntry, any, error)
	// RunCron enqueues one job of cron entry name now, its schedule left
	// alone, and returns the job's id.
	RunCron(ctx context.Context, name string) (string, error)
	Workers(ctx context.Context) ([]Worker, any, error)
	Close() error
}

// Job is one job, as `job ID` shows it. JSON is its --json form.
type Job struct {
	ID, Task, Route, Priority, Status string
	Description, Error                string
	Attempts, MaxRetries              int
	Timeout                           time.Duration // 0: the worker's default
	Created, Scheduled, Started       time.Time
	Finished                          time.Time
	FailedAt                          []time.Time
	Args, Result                      json.RawMessage // "null" when not decodable here
	JSON                              any
}

// JobQuery selects a page of jobs (see runtime.JobQuery).
type JobQuery struct {
	Route, State, Task, Text, Cursor string
	Limit                            int
	Newest                           bool
}

// Page is a page of jobs and the cursor of the next ("" at the end).
type Page struct {
	Jobs []Job
	Next string
	JSON any
}

// Route is one route of `queues`.
type Route struct {
	Name                                       string
	High, Normal, Low, Scheduled, Active, Dead int64
	Paused                                     bool
	OldestPending                              time.Time // zero: none pending
	OldestPendingAge                           time.Duration
	Workers                                    int
}

// CronEntry is one entry of `cron list`.
type CronEntry struct {
	Name, Spec, TZ, Route string
	LastRun, NextRun      time.Time
	RunCount              int64
	LastError             string
}

// Worker is one live worker of `workers`.
type Worker struct {
	ID, Host, Mode        string
	PID                   int
	Routes                []string
	Concurrency, InFlight int
	LastBeat              time.Time
}
