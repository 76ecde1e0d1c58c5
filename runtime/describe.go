package runtime

import (
	"context"
	"fmt"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/strictjson"
)

// Describe attaches what generated code knows at compile time: the type and
// fields of the arguments, the result type, and a strict JSON decoder of the
// arguments (used by the CLI and the HTTP API). It returns t.
func (t *Task[A, R]) Describe(argsType string, fields []Field, result string, decode func([]byte) (A, error)) *Task[A, R] {
	t.argsType, t.fields, t.result, t.decodeJSON = argsType, fields, result, decode
	return t
}

// Var records the name of the Go variable that holds the task (generated
// code calls it), so that messages name what the user wrote, not only the
// wire name.
func (t *Task[A, R]) Var(name string) *Task[A, R] {
	t.varName = name
	return t
}

// Info describes the task with its defaults applied.
func (t *Task[A, R]) Info() admin.Task {
	cfg := jobConfig{route: "default", priority: PriorityNormal, maxRetries: DefaultMaxRetries}
	for _, o := range t.defaults {
		o(&cfg)
	}
	return admin.Task{
		Name: t.name, Route: cfg.route, Priority: cfg.priority, Retries: cfg.maxRetries,
		Timeout: cfg.timeout, Unique: cfg.uniqueTTL, ResultTTL: cfg.resultTTL, KeepsNothing: cfg.keepNothing, Backoff: cfg.backoff,
		ArgsType: t.argsType, Args: t.fields, Result: t.result,
		Key: t.keyInfo(), MaxRunning: t.limitSpec.MaxRunning, Rate: t.limits.RateString(), Burst: t.limitSpec.Burst,
		OnBusy: string(t.limitSpec.OnBusy), Expire: cfg.expireIn,
	}
}

// keyInfo is the key of the task's description: the args path it is read
// from, "func" for a KeyBy that names none, "" for no KeyBy.
func (t *Task[A, R]) keyInfo() string {
	switch {
	case t.keyBy == nil:
		return ""
	case t.keyPath == "":
		return "func"
	}
	return t.keyPath
}

// EnqueueJSON decodes args from JSON with the task's strict decoder (unknown
// fields are errors naming the field) and enqueues them.
func (t *Task[A, R]) EnqueueJSON(ctx context.Context, data []byte, opts ...Option) (string, error) {
	args, err := t.decodeArgsJSON(data)
	if err != nil {
		return "", err
	}
	return t.Enqueue(ctx, args, opts...)
}

// decodeArgsJSON decodes args from JSON with the task's strict decoder; an
// error matches ErrBadArgs.
func (t *Task[A, R]) decodeArgsJSON(data []byte) (A, error) {
	var args A
	var err error
	if t.decodeJSON != nil {
		args, err = t.decodeJSON(data)
	} else {
		err = DecodeStrictJSON(data, &args)
	}
	if err != nil {
		return args, fmt.Errorf("bananas: args of %s: %w", t.name, badArgs{err})
	}
	return args, nil
}

// badArgs marks an error of the args themselves (it matches ErrBadArgs).
type badArgs struct{ error }

func (e badArgs) Unwrap() error        { return e.error }
func (e badArgs) Is(target error) bool { return target == ErrBadArgs }

// DecodeStrictJSON decodes data into v exactly: an object key must be a
// field's JSON name as written (encoding/json would also take "url" for URL),
// unknown keys and trailing data are refused, and so are empty input and null
// — except for a task that takes no args (None), where they mean nothing —
// and containers nested deeper than msgpack carries (MaxJSONDepth). Each
// error names the field by its path, list indexes included
// (field "lines[2].qty"). Generated decoders call it.
//
// The work is linear in len(data), a fixed number of passes at any nesting.
func DecodeStrictJSON(data []byte, v any) error {
	_, none := v.(*None)
	return strictjson.Decode(data, v, none)
}

// MaxJSONDepth caps how deeply objects and arrays may nest in JSON args: as
// deep as the msgpack that carries args to the worker may nest.
const MaxJSONDepth = strictjson.MaxDepth

// jobJSON decodes data with the task's strict decoder and builds the job
// Enqueue would send, without sending it.
func (t *Task[A, R]) jobJSON(data []byte, opts []Option, shards map[string]string) (admin.BatchJob, error) {
	args, err := t.decodeArgsJSON(data)
	if err != nil {
		return admin.BatchJob{}, err
	}
	c, cfg, now, runAt, err := t.prepare(opts, 1)
	if err != nil {
		return admin.BatchJob{}, err
	}
	cfg.shard = batchShards(shards).of(c, cfg.route)
	job, err := t.newJob(c, cfg, args, now, runAt)
	if err != nil {
		return admin.BatchJob{}, err
	}
	return admin.BatchJob{Route: cfg.route, Shard: c.shardOf(cfg, &job), Priority: cfg.priority, Name: t.name, UniqueTTL: cfg.uniqueTTL, Job: job}, nil
}

// batchShards is the shard each route's jobs without a key go to in one
// batch (jobConfig.shard), picked at the route's first job.
type batchShards map[string]string

func (s batchShards) of(c *Client, route string) string {
	if s[route] == "" {
		s[route] = c.q.ShardOf(context.Background(), route, "")
	}
	return s[route]
}

// Limit sets the task's limits (see TaskLimits) and returns t. Workers store
// them in Redis when they start (Worker.Run), for every worker's fetch to
// honour; a task whose limits are removed from the code has them removed at
// the next start of a worker that registers it. Generated code calls Limit
// when the task is declared, as regexp.MustCompile is called: limits that
// are wrong panic, naming the task and the field.
func (t *Task[A, R]) Limit(l TaskLimits) *Task[A, R] {
	ql, err := l.queueLimits()
	if err != nil {
		if t.varName != "" {
			panic(fmt.Sprintf("bananas: %s.Limit (task %s): %v", t.varName, t.name, err))
		}
		panic(fmt.Sprintf("bananas: Limit of task %s: %v", t.name, err))
	}
	t.limits, t.limitSpec = ql, l
	return t
}

// KeyBy makes every job of the task keyed by fn(args) and returns t. Jobs of
// one key form a flow: the flows of a priority are served round-robin, so
// that one key's backlog does not hold back the others, and the task's
// limits (Limit) hold per key. A key is at most queue.MaxKeyLen bytes; a
// longer one is an error of the enqueue. The Key option overrides fn for one
// enqueue. Generated code calls KeyBy for the annotation key key=.
func (t *Task[A, R]) KeyBy(fn func(A) string) *Task[A, R] {
	t.keyBy = fn
	return t
}

// DescribeKey names the path into the args the key of KeyBy is read from
// ("CustomerID", "Order.Shop"), for the task's description (GET
// /api/v1/tasks, the CLI); generated code calls it with KeyBy. It returns t.
func (t *Task[A, R]) DescribeKey(path string) *Task[A, R] {
	t.keyPath = path
	return t
}
