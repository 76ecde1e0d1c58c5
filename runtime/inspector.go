package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"

	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/api"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/openapi"
)

// NewInspector returns the admin layer of c (see admin.Inspector) for the
// tasks that register (the generated Register functions) put on a worker.
func NewInspector(c *Client, register ...func(*Worker)) *admin.Inspector {
	reg := NewWorker(c, WorkerOptions{})
	for _, r := range register {
		r(reg)
	}
	return newInspector(c, reg)
}

// Inspector returns the admin layer of w's client with w's tasks.
func (w *Worker) Inspector() *admin.Inspector { return newInspector(w.c, w) }

func newInspector(c *Client, reg *Worker) *admin.Inspector {
	return admin.NewInspector(c.q, &inspector{c: c, reg: reg})
}

// cancelJob cancels job id as the admin layer does (admin.Inspector.Cancel);
// it needs no registered task.
func (c *Client) cancelJob(ctx context.Context, id string) (Status, error) {
	return newInspector(c, &Worker{c: c}).Cancel(ctx, id)
}

// inspectedClient is the client of an Inspector that this package made.
func inspectedClient(in *admin.Inspector) *Client {
	rt, ok := in.Runtime().(*inspector)
	if !ok {
		panic("bananas: an admin.Inspector not made by runtime.NewInspector or Worker.Inspector")
	}
	return rt.c
}

// inspector is the runtime under the admin layer (admin.Runtime): the
// client c and the tasks registered on reg, which it never runs.
type inspector struct {
	c   *Client
	reg *Worker

	// The OpenAPI document, built once: the tasks do not change.
	openapiOnce sync.Once
	openapiDoc  []byte
	openapiErr  error
}

var _ admin.Runtime = (*inspector)(nil)

func (in *inspector) Tasks() []admin.Task {
	out := make([]admin.Task, 0, len(in.reg.handlers))
	for _, name := range in.reg.Tasks() {
		t, _ := in.Task(name)
		out = append(out, t.Task)
	}
	return out
}

func (in *inspector) Task(name string) (admin.RegisteredTask, bool) {
	h := in.reg.handlers[name]
	if h == nil || h.info == nil {
		return admin.RegisteredTask{}, false
	}
	info := h.info()
	for _, e := range in.reg.cron {
		if e.Name == name {
			info.Cron = &admin.CronSpec{Spec: e.Spec, TZ: e.TZ}
		}
	}
	return admin.RegisteredTask{Task: info, ArgsJSON: h.argsJSON, ResultJSON: h.resultJSON}, true
}

func (in *inspector) OpenAPI() ([]byte, error) {
	in.openapiOnce.Do(func() {
		var tasks []openapi.Task
		for _, name := range in.reg.Tasks() {
			h := in.reg.handlers[name]
			info := h.info()
			result := h.resultType
			if result == nil {
				// A task without a result completes with None, whose JSON
				// the job's result is: {}, not null.
				result = reflect.TypeFor[None]()
			}
			tasks = append(tasks, openapi.Task{Name: name, Route: info.Route, Priority: string(info.Priority), Args: h.argsType, Result: result})
		}
		in.openapiDoc, in.openapiErr = openapi.Document(tasks, openapi.Options{
			Title: "Bananas", Version: "1",
			Endpoints: api.Endpoints(),
			// bananastype.Time writes its own JSON: an RFC 3339 time, or null when unset.
			Custom: map[reflect.Type]map[string]any{
				reflect.TypeFor[bananastype.Time](): {"type": []any{"string", "null"}, "format": "date-time"},
				reflect.TypeFor[queue.Status]():     statusSchema(),
			},
		})
	})
	return in.openapiDoc, in.openapiErr
}

func (in *inspector) ArgsSchemas() (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, name := range in.reg.Tasks() {
		s, err := openapi.Schema(in.reg.handlers[name].argsType)
		if err != nil {
			return nil, fmt.Errorf("args schema of %s: %w", name, err)
		}
		if out[name], err = json.Marshal(s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (in *inspector) Cron(ctx context.Context) ([]bananastype.Schedule, error) {
	return in.reg.CronStatus(ctx)
}

func (in *inspector) CronJob(name string, now time.Time) (admin.CronJob, error) {
	for _, e := range in.reg.cron {
		if e.Name != name {
			continue
		}
		j, err := e.job(in.c, now)
		if err != nil {
			return admin.CronJob{}, fmt.Errorf("run cron entry %s: %w", name, err)
		}
		return admin.CronJob{Route: e.Route, Priority: e.Priority, Job: j}, nil
	}
	return admin.CronJob{}, fmt.Errorf("%w %q: the cron entries of this program are %s", ErrUnknownCron, name, cronNames(in.reg.cron))
}

// cronNames lists the entries' names for an error message.
func cronNames(entries []cronEntry) string {
	if len(entries) == 0 {
		return "none"
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Enqueue enqueues a job of the task named s.Name with args in JSON,
// decoded exactly by the task's generated decoder: an unknown field, a key
// that matches only case-insensitively, a wrong type, empty input or null
// is an error naming what is wrong (it matches ErrBadArgs).
func (in *inspector) Enqueue(ctx context.Context, s admin.Submission) (string, error) {
	opts, err := submissionOptions(s)
	if err != nil {
		return "", err
	}
	if err := checkUniqueBy(s); err != nil {
		return "", err
	}
	h := in.reg.handlers[s.Name]
	if h == nil {
		return "", in.unknownTask(s.Name)
	}
	return h.enqueueJSON(ctx, in.c, s.Args, opts)
}

// BatchJob checks one submission of a batch and builds its job, carrying
// headers; a refusal names the field (admin.Classify).
func (in *inspector) BatchJob(s admin.Submission, headers, shards map[string]string) (admin.BatchJob, error) {
	opts, err := submissionOptions(s)
	if err != nil {
		return admin.BatchJob{}, err
	}
	if err := checkUniqueBy(s); err != nil {
		return admin.BatchJob{}, err
	}
	if len(headers) > 0 {
		opts = append(opts, func(c *jobConfig) { c.headers = withHeaders(c.headers, headers) })
	}
	h := in.reg.handlers[s.Name]
	if h == nil {
		return admin.BatchJob{}, in.unknownTask(s.Name)
	}
	j, err := h.jobJSON(in.c, s.Args, opts, shards)
	switch {
	case err == nil:
		return j, nil
	case errors.Is(err, ErrBadArgs), errors.Is(err, ErrPayloadTooLarge):
		return admin.BatchJob{}, admin.Invalid("args", "%s", admin.Message(err))
	}
	return admin.BatchJob{}, admin.Invalid("", "%s", admin.Message(err))
}

// unknownTask is the refusal of a task name no registered task has.
func (in *inspector) unknownTask(name string) error {
	return fmt.Errorf("%w: no task named %q (registered: %s)", ErrUnknownTask, name, strings.Join(in.reg.Tasks(), ", "))
}

// submissionOptions are the enqueue options of a submission's route,
// priority and delay, or a refusal naming the one that is wrong.
func submissionOptions(s admin.Submission) ([]Option, error) {
	var opts []Option
	if s.Route != "" {
		if err := queue.CheckRoute(s.Route); err != nil {
			return nil, admin.InvalidValue("route", "", err.Error())
		}
		opts = append(opts, Route(s.Route))
	}
	if s.Priority != "" {
		if !queue.ValidPriority(s.Priority) {
			return nil, admin.InvalidValue("priority", s.Priority, "use high, normal or low")
		}
		opts = append(opts, WithPriority(Priority(s.Priority)))
	}
	if s.Delay != "" {
		d, err := time.ParseDuration(s.Delay)
		if err != nil || d < 0 {
			return nil, admin.InvalidValue("delay", s.Delay, "want a duration such as 90s or 1h30m")
		}
		if d > 0 {
			opts = append(opts, Delay(d))
		}
	}
	uopts, err := submissionUniqueOptions(s)
	if err != nil {
		return nil, err
	}
	opts = append(opts, uopts...)
	if s.Expire != "" {
		o, err := expireOption(s.Expire)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// expireOption is a submission's expire: a positive Go duration from now,
// or an RFC 3339 time.
func expireOption(v string) (Option, error) {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return ExpireIn(d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return ExpireAt(t), nil
	}
	return nil, admin.InvalidValue("expire", v, "want a positive duration such as 10m, or an RFC 3339 time")
}

// Hooked runs do inside the client's enqueue hooks, which wrap a batch of
// the admin layer once, as they wrap an EnqueueMany: Enqueueing.Task and
// Route are the batch's when all its jobs share them, "" otherwise, and
// the headers the hooks set go to every job.
func (in *inspector) Hooked(ctx context.Context, task, route string, count int, do func(context.Context, map[string]string) ([]string, error)) ([]string, error) {
	e := &Enqueueing{Count: count, Task: task, Route: route}
	var ids []string
	err := in.c.hooked(ctx, e, jobConfig{}, func(ctx context.Context, cfg jobConfig) (err error) {
		ids, err = do(ctx, cfg.headers)
		e.IDs = ids
		return err
	})
	return ids, err
}

func (in *inspector) Enqueued(route string, p Priority, task string, n int) {
	in.c.metrics.Enqueued(route, string(p), task, n)
}

func (in *inspector) Canceled(route string, p Priority, task string) {
	in.c.metrics.Canceled(route, string(p), task)
}

func (in *inspector) CanceledRecord(j *bananastype.Job) ([]byte, time.Duration, error) {
	args, err := in.c.payloads.Pack(queue.PurposeArgs, j.ID, j.ArgsMsgpack) // Job unpacked them
	if err != nil {
		return nil, 0, err
	}
	b, err := engine.CanceledRecord(j.ID, j.Name, j.Priority, j.CreatedAt, j.MaxRetries, j.Attempts,
		queue.Envelope{Args: args, Timeout: j.Timeout.Milliseconds(), Description: j.Description}, j.FailedAt, j.Earlier, in.c.q.Now())
	return b, DefaultFailureTTL, err
}

func (in *inspector) Job(ctx context.Context, id string) (*bananastype.Job, error) {
	return in.c.Job(ctx, id)
}

func (in *inspector) Wait(ctx context.Context, id string) error {
	_, err := in.c.waiter.Wait(ctx, id, in.c.lookupResult)
	return err
}

func (in *inspector) Workers(ctx context.Context) ([]admin.Worker, error) { return in.c.Workers(ctx) }

func (in *inspector) RouteTakers(ctx context.Context) (map[string]int, error) {
	return in.c.routeTakers(ctx)
}

func (in *inspector) History() history.Store { return in.c.History() }

func (in *inspector) Ping(ctx context.Context) error { return in.c.rdb.Ping(ctx).Err() }

// Workflow is the client's snapshot of workflow id (Client.Workflow).
func (in *inspector) Workflow(ctx context.Context, id string) (*bananastype.Workflow, error) {
	return in.c.Workflow(ctx, id)
}

func (in *inspector) WorkflowTask(template []byte) string {
	if tpl, ok := readTemplate(template); ok {
		return tpl.Name
	}
	return ""
}

func (in *inspector) CancelWorkflow(ctx context.Context, id string) (string, error) {
	return in.c.CancelWorkflow(ctx, id)
}

func (in *inspector) RetryWorkflow(ctx context.Context, id string) (int, error) {
	return in.c.RetryWorkflow(ctx, id)
}

func (in *inspector) SignalWorkflow(ctx context.Context, id, name string, payload []byte) error {
	return in.c.SignalJSON(ctx, id, name, payload)
}

func (in *inspector) WorkflowGrace() time.Duration { return in.c.workflowRunner().Grace }

func (in *inspector) StepReplayed(ctx context.Context, workflow string, k int, id string) error {
	return in.c.workflowRunner().Replayed(ctx, workflow, k, id)
}

// statusSchema is the OpenAPI schema of a job's status: one of the status
// words (queue.Statuses).
func statusSchema() map[string]any {
	enum := make([]any, len(queue.Statuses))
	for i, s := range queue.Statuses {
		enum[i] = string(s)
	}
	return map[string]any{"type": "string", "enum": enum}
}
