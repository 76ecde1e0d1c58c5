package admin

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/bananastype"
)

// Admin lists and acts on the jobs, routes, cron entries and workers of a
// namespace. Inspector implements it over Redis; the CLI, the HTTP
// API and the dashboard call it, and their tests call a fake.
//
// Errors are the admin layer's (see Classify): a refusal names what is
// wrong; anything else is a failure of the server or of Redis.
type Admin interface {
	// The actions on jobs and routes are declared beside the Inspector's
	// implementation of them (inspector_actions.go), so that an action is
	// one file here.
	JobActions
	RouteActions
	ScheduleActions // inspector_schedules.go
	Auditor         // audit.go

	// Submit checks s (its task, its args through the task's strict
	// decoder, its route, priority and delay) and enqueues it. Warning,
	// when not "", is what the submitter should know of the job it made
	// (its route is paused, or no live worker takes it).
	Submit(ctx context.Context, s Submission) (id, warning string, err error)
	// SubmitBatch checks every job and enqueues them all, returning their
	// ids in order, or none: refused lists the jobs refused already (their
	// Submission is zero), and the others are checked all the same, so
	// that a *BatchError names every refused job.
	SubmitBatch(ctx context.Context, subs []Submission, refused []BatchRefusal) (ids []string, err error)

	Job(ctx context.Context, id string) (*bananastype.Job, error)
	Jobs(ctx context.Context, q JobQuery) (bananastype.JobPage, error)
	// Result waits up to wait for job id to finish, then reads it.
	Result(ctx context.Context, id string, wait time.Duration) (*bananastype.Job, error)

	Routes(ctx context.Context) ([]bananastype.Route, error)
	// Shards is the shard count of route, 1 for a route never sharded;
	// SetShards spreads route over n shards (1 to 256; a bad n is a
	// refusal naming the field shards).
	Shards(ctx context.Context, route string) (int, error)
	SetShards(ctx context.Context, route string, n int) error
	// Limits are route's own limits (none: zero); SetLimits changes them
	// (a bad field is a refusal naming it) and returns those now in force,
	// which every worker's next fetch honours; Flows is what the route's
	// flow control holds now, with its busiest keys.
	Limits(ctx context.Context, route string) (Limits, error)
	SetLimits(ctx context.Context, route string, p LimitsPatch) (Limits, error)
	Flows(ctx context.Context, route string) (Flows, error)

	// SubmitWorkflow checks s — its labels, each step's task, args and
	// predecessors, and that each step takes what its predecessors return
	// — and submits it whole, or refuses it naming the step
	// ("steps[2].after"). It returns the workflow's id and each step's job
	// id by label.
	SubmitWorkflow(ctx context.Context, s WorkflowSubmission) (id string, jobs map[string]string, err error)
	// Workflow is a snapshot of workflow id (ErrWorkflowNotFound).
	Workflow(ctx context.Context, id string) (*bananastype.Workflow, error)
	// Workflows lists a page of workflows, newest first (ErrBadQuery for a
	// bad status, limit or cursor).
	Workflows(ctx context.Context, q WorkflowQuery) (bananastype.WorkflowPage, error)
	// CancelWorkflow cancels workflow id — its steps not yet run are
	// canceled, its running steps' jobs asked to stop — and returns it
	// after the call (a completed workflow stays completed).
	CancelWorkflow(ctx context.Context, id string) (*bananastype.Workflow, error)
	// RetryWorkflow runs the failed and canceled steps of workflow id
	// again, each under a new job id, and returns it after the call with
	// how many steps run again (0: none had failed or been canceled).
	RetryWorkflow(ctx context.Context, id string) (*bananastype.Workflow, int, error)
	// SignalWorkflow sends the signal name to workflow id with payload
	// (JSON, read by the wait's type when the program knows it: a field
	// of the wrong name or type is ErrBadArgs naming it). No such
	// workflow: ErrWorkflowNotFound; no wait of that name: ErrNoSuchWait;
	// a workflow that ended, or whose waits of that name all have their
	// signal: ErrWrongState.
	SignalWorkflow(ctx context.Context, id, name string, payload json.RawMessage) error

	// Tasks are the registered tasks, sorted by name.
	Tasks() []Task
	Cron(ctx context.Context) ([]bananastype.Schedule, error)
	// RunCron enqueues one job of cron entry name now, its schedule left
	// alone, and returns the job's id.
	RunCron(ctx context.Context, name string) (string, error)
	Workers(ctx context.Context) ([]Worker, error)
	// Stats is the per-minute stats series of the last window (at most 24h).
	Stats(ctx context.Context, window time.Duration) (Stats, error)

	// History is one page of the task history, newest end first: the jobs
	// Redis has let go, as the program's history store keeps them. A
	// program that keeps none refuses with ErrNoHistory.
	History(ctx context.Context, q HistoryQuery) (bananastype.HistoryPage, error)
	// MigrateHistory creates or migrates the history store's schema, and
	// says whether the store has one to migrate (a store that keeps its
	// own has nothing to do). ErrNoHistory without a history.
	MigrateHistory(ctx context.Context) (migrated bool, err error)

	// OpenAPI is the OpenAPI document of the HTTP API for the registered
	// tasks; ArgsSchemas each task's args JSON Schema, by task name.
	OpenAPI() ([]byte, error)
	ArgsSchemas() (map[string]json.RawMessage, error)
	// Ready reports whether the admin layer can serve (Redis answers).
	Ready(ctx context.Context) error
}

// Submission is one job to enqueue, as the API's POST /api/v1/jobs and the
// CLI's `enqueue` give it.
type Submission struct {
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Route    string          `json:"route,omitempty"`
	Priority string          `json:"priority,omitempty"`
	// Delay is a Go duration ("90s", "1h30m"), the wait before the job is due.
	Delay string `json:"delay,omitempty"`
	// Unique keys (runtime.Unique and its options): Unique is the key's ttl
	// (a Go duration), UniqueBy the fields of the args it is made of
	// (comma-separated paths), UniqueUntil started, completed or ended, and
	// Debounce a Go duration; each of the last three needs Unique.
	Unique      string `json:"unique,omitempty"`
	UniqueBy    string `json:"unique_by,omitempty"`
	UniqueUntil string `json:"unique_until,omitempty"`
	Debounce    string `json:"debounce,omitempty"`
	// Expire is when the job expires if it has not started by then
	// (runtime.ExpireIn, runtime.ExpireAt): a Go duration from now ("10m")
	// or an RFC 3339 time.
	Expire string `json:"expire,omitempty"`
}

// MaxBatch is the most jobs one batch takes: the runtime writes up to that
// many jobs of a route in one script call.
const MaxBatch = 1000

// BatchRefusal is one refused job of a batch: its 0-based index, the key of
// its submission that is wrong ("" when it is the submission as a whole)
// and what is wrong.
type BatchRefusal struct {
	Index int    `json:"index"`
	Field string `json:"field"`
	Error string `json:"error"`
}

// BatchError is an answer to a batch other than success: refused jobs
// (BadInput, nothing enqueued), duplicates of a unique task (Conflict), or a
// failure of Redis part-way (Failure), where IDs tells which jobs were
// stored.
type BatchError struct {
	Class Class
	Msg   string
	// Jobs lists every job the answer is about, by index.
	Jobs []BatchRefusal
	// IDs, when set, has one slot per job: the id of a job stored, or ""
	// for one that was not (a failure), or the id of the job that already
	// holds a duplicate's unique key (a conflict).
	IDs []string
}

func (e *BatchError) Error() string { return e.Msg }
