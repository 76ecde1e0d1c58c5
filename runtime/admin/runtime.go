package admin

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/queue"
)

// Runtime is what the Inspector asks of the program that registered its
// tasks: what the generated tasks know (their descriptions, their strict
// JSON decoders, their schemas, the cron entries) and the client's steps
// that go through them or through the client's own state (its hooks,
// metrics, result waiters, workflow runner and history store). Package
// runtime implements it over its Client and a Worker's handlers; the
// Inspector does the rest over the queue itself.
type Runtime interface {
	// Tasks are the registered tasks, sorted by name, a cron entry's task
	// with its Cron set.
	Tasks() []Task
	// Task is the registered task of name, with what its generated code
	// does for the admin layer; false when none is registered.
	Task(name string) (RegisteredTask, bool)
	// OpenAPI is the OpenAPI document of the HTTP API for the registered
	// tasks; ArgsSchemas each task's args JSON Schema, by task name.
	OpenAPI() ([]byte, error)
	ArgsSchemas() (map[string]json.RawMessage, error)
	// Cron reads the state of every registered cron entry. CronJob builds
	// the job a tick of entry name at now enqueues, or an error matching
	// ErrUnknownCron that lists the entries.
	Cron(ctx context.Context) ([]bananastype.Schedule, error)
	CronJob(name string, now time.Time) (CronJob, error)

	// Enqueue checks s (its route, priority, delay, task and args, through
	// the task's strict decoder) and enqueues it; a refusal names the
	// submission's key at fault (Classify).
	Enqueue(ctx context.Context, s Submission) (string, error)
	// BatchJob checks s as Enqueue does and builds its job, carrying
	// headers, without sending it; shards keeps, per route, the shard the
	// batch's jobs without a key go to.
	BatchJob(s Submission, headers map[string]string, shards map[string]string) (BatchJob, error)
	// Hooked runs do inside the client's enqueue hooks for count jobs of
	// task and route ("" when they differ); do gets the hooks' headers.
	Hooked(ctx context.Context, task, route string, count int, do func(ctx context.Context, headers map[string]string) ([]string, error)) ([]string, error)
	// Enqueued and Canceled count jobs in the client's metrics.
	Enqueued(route string, p Priority, task string, n int)
	Canceled(route string, p Priority, task string)
	// CanceledRecord is the result record of job j canceled now, and how
	// long it is kept.
	CanceledRecord(j *bananastype.Job) (record []byte, ttl time.Duration, err error)

	// Job is the client's snapshot of job id (ErrJobNotFound), its args as
	// JSON when its task is declared in the program.
	Job(ctx context.Context, id string) (*bananastype.Job, error)
	// Wait waits for job id to finish, until ctx ends.
	Wait(ctx context.Context, id string) error
	// Workers are the live workers; RouteTakers counts, per route, those
	// that take it.
	Workers(ctx context.Context) ([]Worker, error)
	RouteTakers(ctx context.Context) (map[string]int, error)
	// History is the client's task history store; nil when it keeps none.
	History() history.Store
	// Ping reports whether Redis answers.
	Ping(ctx context.Context) error

	// Workflow is a snapshot of workflow id, its result as the JSON of its
	// final task's result type (ErrWorkflowNotFound).
	Workflow(ctx context.Context, id string) (*bananastype.Workflow, error)
	// WorkflowTask is the final task of a workflow, read from the template
	// its record keeps; "" when it does not read.
	WorkflowTask(template []byte) string
	SubmitWorkflow(ctx context.Context, s WorkflowSubmission) (string, map[string]string, error)
	CancelWorkflow(ctx context.Context, id string) (string, error)
	RetryWorkflow(ctx context.Context, id string) (int, error)
	SignalWorkflow(ctx context.Context, id, name string, payload []byte) error
	// WorkflowGrace is how long a workflow's keeper waits on a step that
	// was replayed; StepReplayed tells workflow that its step k's job id
	// was replayed.
	WorkflowGrace() time.Duration
	StepReplayed(ctx context.Context, workflow string, k int, id string) error
}

// RegisteredTask is a registered task as its generated code serves the
// admin layer.
type RegisteredTask struct {
	Task
	// ArgsJSON and ResultJSON write stored (msgpack) args and a result as
	// the JSON of their Go types; nil when the task has no generated codec.
	ArgsJSON, ResultJSON func(msgpack []byte) (json.RawMessage, error)
}

// BatchJob is one job of a batch submission, checked and encoded, not sent.
type BatchJob struct {
	Route     string
	Shard     string // the shard of Route it goes to
	Priority  Priority
	Name      string
	UniqueTTL time.Duration
	Job       queue.NewJob
}

// CronJob is the job one tick of a cron entry enqueues, and where.
type CronJob struct {
	Route    string
	Priority Priority
	Job      queue.NewJob
}
