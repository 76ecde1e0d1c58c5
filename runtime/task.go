package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Task is a typed handle on one kind of job: A is its arguments, R its result
// (None when there is none). Generated code declares one per annotated
// function; tests and hand-wired programs may call NewTask themselves.
type Task[A, R any] struct {
	name     string
	defaults []Option
	client   *Client

	// Filled by Describe and Var (generated code).
	varName    string // the Go variable holding the task, for messages
	argsType   string
	fields     []Field
	result     string
	decodeJSON func([]byte) (A, error)

	// Flow control (limits.go): the limits as given and as the queue takes
	// them, the key of a job's args, and the args path it reads.
	limitSpec TaskLimits
	limits    queue.Limits
	keyBy     func(A) string
	keyPath   string
}

// NewTask declares the task with wire name name. defaults apply to every
// enqueue before the enqueue's own options (annotation keys become defaults).
func NewTask[A, R any](name string, defaults ...Option) *Task[A, R] {
	t := &Task[A, R]{name: name, defaults: defaults}
	declareArgs(name, t)
	return t
}

// name -> *argsDecoder

func declareArgs[A, R any](name string, t *Task[A, R]) {
	d := &argsDecoder{typ: reflect.TypeFor[A](), result: reflect.TypeFor[R](), toJSON: jsonOf[A], keyOf: t.keyOfStored}
	if _, none := any(*new(R)).(None); !none {
		d.resultJSON = jsonOf[R]
	}
	if prev, loaded := declaredTasks.LoadOrStore(name, d); loaded && (prev.(*argsDecoder).typ != d.typ || prev.(*argsDecoder).result != d.result) {
		declaredTasks.Store(name, &argsDecoder{typ: d.typ, result: d.result})
	}
}

// Name returns the task's wire name.
func (t *Task[A, R]) Name() string { return t.name }

// With returns a copy of the task bound to client c instead of the default client.
func (t *Task[A, R]) With(c *Client) *Task[A, R] {
	cp := *t
	cp.client = c
	return &cp
}

func (t *Task[A, R]) clientOrDefault() (*Client, error) {
	if t.client != nil {
		return t.client, nil
	}
	if c := Default(); c != nil {
		return c, nil
	}
	stub := t.varName
	if stub == "" {
		stub = "the task's variable"
	}
	return nil, fmt.Errorf("bananas: %s (task %s) has no client: call runtime.SetDefault(client) once at start, or use %s.With(client)", stub, t.name, stub)
}

// Enqueue adds one job and returns its id. Concurrent enqueues of a route and
// priority share Redis round trips. If ctx ends while the enqueue is on its
// way, the error is ctx's and the job may still have been enqueued.
func (t *Task[A, R]) Enqueue(ctx context.Context, args A, opts ...Option) (string, error) {
	// The one-job path of enqueue, without its slices: every producer's
	// enqueue passes here.
	c, cfg, now, runAt, err := t.prepare(opts, 1)
	if err != nil {
		return "", err
	}
	if c.hooks.enqueueRun.Load() == nil { // every producer passes here: no Enqueueing, no closure
		return t.enqueueOne(ctx, c, cfg, args, now, runAt)
	}
	var id string
	e := &Enqueueing{Task: t.name, Route: cfg.route, Count: 1}
	err = c.hooked(ctx, e, cfg, func(ctx context.Context, cfg jobConfig) (err error) {
		id, err = t.enqueueOne(ctx, c, cfg, args, now, runAt)
		e.IDs = []string{id}
		return err
	})
	return id, err
}

// enqueueOne stores one job of the task.
func (t *Task[A, R]) enqueueOne(ctx context.Context, c *Client, cfg jobConfig, args A, now, runAt time.Time) (string, error) {
	job, err := t.newJob(c, cfg, args, now, runAt)
	if err != nil {
		return "", err
	}
	h, err := c.q.Jobs.EnqueueOne(ctx, c.shardOf(cfg, &job), cfg.priority, job)
	if err != nil {
		return "", fmt.Errorf("bananas: enqueue %s: %w", t.name, err)
	}
	if h == queue.BusyHolder {
		return "", fmt.Errorf("%w: %s", ErrKeyBusy, busyKey(t.name, job.Key, job.BusyCap))
	}
	if id, ok := strings.CutPrefix(h, queue.DebouncedMark); ok {
		return id, fmt.Errorf("%w: %s job %s waits with these args, due %s from now", ErrDebounced, t.name, id, cfg.uniq.debounce)
	}
	if h != "" {
		return h, fmt.Errorf("%w: %s", ErrDuplicate, c.holderOf(ctx, t.name, h, cfg))
	}
	c.metrics.Enqueued(cfg.route, string(cfg.priority), t.name, 1)
	return job.ID, nil
}

// holderOf says what a duplicate enqueue found: the job holding the id or
// the unique key, and its status (a completed job still holds a unique key
// for the rest of its window, and a chosen id for as long as its record).
func (c *Client) holderOf(ctx context.Context, name, holder string, cfg jobConfig) string {
	why := "its id"
	if cfg.uniqueTTL > 0 && cfg.id == "" {
		why = fmt.Sprintf("its unique key (%s, held until %s, %s at most)", uniqueWhat(cfg), untilOr(cfg.uniq.until), cfg.uniqueTTL)
	}
	status := "status unknown"
	if info, err := c.Job(ctx, holder); err == nil {
		status = string(info.Status)
	} else if errors.Is(err, ErrJobNotFound) {
		status = "its record has expired"
	}
	return fmt.Sprintf("%s job %s (%s) already holds %s", name, holder, status, why)
}

// EnqueueMany adds one job per element of args in one round trip (per 1,000
// jobs) and returns their ids in order, all or none. With Unique, a
// duplicate's slot holds the existing job's id and the error matches
// ErrDuplicate. On a sharded route, keys (KeyBy, Key: each flow lives on one
// shard), unique keys and chosen ids spread a batch over the route's shards,
// one call each: when one fails after
// others went through, the ids of the jobs stored are returned with the
// error ("" for the others).
func (t *Task[A, R]) EnqueueMany(ctx context.Context, args []A, opts ...Option) ([]string, error) {
	return t.enqueue(ctx, args, opts)
}

// config applies the task's defaults, then opts.
func (t *Task[A, R]) config(opts []Option) (jobConfig, error) {
	cfg := jobConfig{route: "default", priority: PriorityNormal}
	for _, o := range t.defaults {
		o(&cfg)
	}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.errs) > 0 {
		return cfg, fmt.Errorf("bananas: enqueue %s: %w", t.name, errors.Join(cfg.errs...))
	}
	return cfg, nil
}

// newJob encodes one job of the task: args checked against the payload limit,
// its key (keyOf), a fresh id (or the WithID one), the unique key, and the
// envelope with the args as stored (packed for the id: compressed, sealed).
func (t *Task[A, R]) newJob(c *Client, cfg jobConfig, args A, now, runAt time.Time) (queue.NewJob, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	raw, err := e.encode(args) // copied by EncodeEnvelope (or packed), hashed for Unique
	if err != nil {
		return queue.NewJob{}, fmt.Errorf("bananas: enqueue %s: encode args: %w", t.name, err)
	}
	if err := checkPayload("args of ", t.name, len(raw), c.maxPayload); err != nil {
		return queue.NewJob{}, err
	}
	retries := c.maxRetries
	if cfg.hasRetries {
		retries = cfg.maxRetries
	}
	j := queue.NewJob{ID: cfg.id, Name: t.name, MaxRetries: retries, RunAt: runAt, ChosenID: cfg.id != ""}
	if j.Keyed, j.Key, err = t.keyOf(cfg, args); err != nil {
		return queue.NewJob{}, err
	}
	if err := cfg.checkUnique(); err != nil {
		return queue.NewJob{}, fmt.Errorf("bananas: enqueue %s: %w", t.name, err)
	}
	j.ExpireAt = cfg.expiry(now)
	if j.Keyed && t.limitSpec.OnBusy != OnBusyWait {
		j.OnBusy, j.BusyCap = string(t.limitSpec.OnBusy), t.limits.MaxRunning
	}
	if cfg.uniqueTTL > 0 {
		if j.UniqueKey, err = uniqueKeyOf(t.name, raw, args, cfg.uniq.by); err != nil {
			return queue.NewJob{}, fmt.Errorf("bananas: enqueue %s: %w", t.name, err)
		}
		j.UniqueTTL, j.UniqueUntil = cfg.uniqueTTL, cfg.uniq.until
		j.Debounce, j.DebounceMax = cfg.uniq.debounce, cfg.uniq.debounceMax
		if d := cfg.uniq.debounce; d > 0 && j.RunAt.Before(now.Add(d)) {
			j.RunAt = now.Add(d) // a debounced job waits its debounce
		}
	}
	if j.ID != "" {
		if err := t.checkFlowID(c, cfg, j); err != nil {
			return j, err
		}
	} else {
		shard := cfg.route
		switch {
		case cfg.unsharded:
		case j.Keyed: // a flow lives on one shard, whatever its unique keys
			shard = c.flowShard(context.Background(), cfg.route, t.name, j.Key)
		case j.UniqueKey != "":
			shard = c.q.ShardOf(context.Background(), cfg.route, j.UniqueKey)
		case cfg.shard != "":
			shard = cfg.shard
		default:
			shard = c.q.ShardNow(context.Background(), cfg.route)
		}
		j.ID = queue.NewID(shard, now)
	}
	stored, err := c.packArgs(cfg, t.name, j.ID, raw)
	if err != nil {
		return queue.NewJob{}, fmt.Errorf("bananas: enqueue %s: %w", t.name, err)
	}
	j.Envelope, err = queue.EncodeEnvelope(queue.Envelope{
		Args: stored, Timeout: cfg.timeout.Milliseconds(), Description: cfg.description,
		ResultTTL: cfg.successTTLMS(), FailureTTL: cfg.resultTTL.Milliseconds(),
		Backoff: cfg.backoff.Milliseconds(), Headers: cfg.headers,
	})
	if err != nil {
		return queue.NewJob{}, fmt.Errorf("bananas: enqueue %s: %w", t.name, err)
	}
	return j, nil
}

// checkFlowID refuses a keyed job whose chosen id, of the shape Bananas
// generates, names another shard of the route than the one its flow lives
// on: the id decides where the job is written, and a flow split over shards
// would be limited on each of them apart.
func (t *Task[A, R]) checkFlowID(c *Client, cfg jobConfig, j queue.NewJob) error {
	r, ok := queue.RouteOf(j.ID)
	if !j.Keyed || !ok || cfg.unsharded {
		return nil
	}
	if want := c.flowShard(context.Background(), cfg.route, t.name, j.Key); r != want {
		return fmt.Errorf("bananas: enqueue %s: runtime.WithID: the id ends in shard %s, but the job's key %q lives on shard %s of route %s: end the id in .%s or choose an id of another shape",
			t.name, r, j.Key, want, cfg.route, want)
	}
	return nil
}

// shardOf returns the shard of cfg's route that job j, built by newJob,
// goes to: the one its id ends in, or for a chosen id of another shape the
// shard of its flow when it is keyed, else the one its id hashes to (so a
// second enqueue of the id meets the first).
func (c *Client) shardOf(cfg jobConfig, j *queue.NewJob) string {
	if r, ok := queue.RouteOf(j.ID); ok {
		return r
	}
	if cfg.unsharded {
		return cfg.route
	}
	if j.Keyed { // a chosen id of another shape: its flow's shard
		return c.flowShard(context.Background(), cfg.route, j.Name, j.Key)
	}
	return c.q.ShardOf(context.Background(), cfg.route, j.ID)
}

// prepare resolves the client and options of an enqueue of n jobs, and the
// time it happens at and the jobs' due time.
func (t *Task[A, R]) prepare(opts []Option, n int) (c *Client, cfg jobConfig, now, runAt time.Time, err error) {
	if c, err = t.clientOrDefault(); err != nil {
		return
	}
	if cfg, err = t.config(opts); err != nil {
		return
	}
	if cfg.id != "" && n != 1 {
		err = fmt.Errorf("bananas: enqueue %s: WithID names one job, got %d", t.name, n)
		return
	}
	if cfg.id != "" {
		if err = queue.CheckIDRoute(cfg.id, cfg.route); err != nil { // WithID checked the rest
			err = fmt.Errorf("bananas: enqueue %s: runtime.WithID: %w", t.name, err)
			return
		}
	}
	now = c.q.Now()
	runAt = cfg.runAt
	if cfg.delay > 0 {
		runAt = now.Add(cfg.delay)
	}
	return
}

func (t *Task[A, R]) enqueue(ctx context.Context, args []A, opts []Option) ([]string, error) {
	if len(args) == 1 { // coalesced with other producers' single enqueues
		id, err := t.Enqueue(ctx, args[0], opts...)
		if id == "" {
			return nil, err
		}
		return []string{id}, err // err: ErrDuplicate, id the holder's
	}
	c, cfg, now, runAt, err := t.prepare(opts, len(args))
	if err != nil {
		return nil, err
	}
	var ids []string
	e := &Enqueueing{Task: t.name, Route: cfg.route, Count: len(args)}
	err = c.hooked(ctx, e, cfg, func(ctx context.Context, cfg jobConfig) (err error) {
		ids, err = t.enqueueBatch(ctx, c, cfg, args, now, runAt)
		e.IDs = ids
		return err
	})
	return ids, err
}

// enqueueBatch stores the jobs of a batch of the task (EnqueueMany).
func (t *Task[A, R]) enqueueBatch(ctx context.Context, c *Client, cfg jobConfig, args []A, now, runAt time.Time) ([]string, error) {
	var err error
	cfg.shard = c.q.ShardOf(ctx, cfg.route, "")
	jobs := make([]queue.NewJob, len(args))
	for i, a := range args {
		if jobs[i], err = t.newJob(c, cfg, a, now, runAt); err != nil {
			return nil, err
		}
	}
	holders, stored, err := c.enqueueSharded(ctx, cfg, jobs, now)
	if err != nil && stored != nil {
		// Part-way over the shards of a sharded route: say which are in.
		ids := make([]string, len(jobs))
		n := 0
		for i := range jobs {
			if stored[i] {
				ids[i], n = jobs[i].ID, n+1
			}
		}
		return ids, fmt.Errorf("bananas: enqueue %s: %d of %d jobs were stored before a call failed (their keys, unique keys or ids spread them over the route's shards, one call each): their ids are returned, \"\" for the others; enqueue only those again: %w",
			t.name, n, len(jobs), err)
	}
	if err != nil {
		return nil, fmt.Errorf("bananas: enqueue %s: %w", t.name, err)
	}
	ids := make([]string, len(jobs))
	dups, busy := 0, []string(nil)
	for i, h := range holders {
		ids[i] = jobs[i].ID
		switch {
		case h == queue.BusyHolder:
			ids[i] = ""
			busy = append(busy, busyKey(t.name, jobs[i].Key, jobs[i].BusyCap))
		case h != "":
			ids[i] = strings.TrimPrefix(h, queue.DebouncedMark)
			dups++
		}
	}
	c.metrics.Enqueued(cfg.route, string(cfg.priority), t.name, len(jobs)-dups-len(busy))
	if len(busy) > 0 {
		return ids, fmt.Errorf("%w: %d of %d %s jobs were refused (their ids are \"\"): %s", ErrKeyBusy, len(busy), len(jobs), t.name, strings.Join(busy, "; "))
	}
	if dups > 0 {
		return ids, fmt.Errorf("%w: %d of %d %s jobs were already enqueued", ErrDuplicate, dups, len(jobs), t.name)
	}
	return ids, nil
}

// Await blocks until job id finishes and returns its typed result, or a
// *JobError when it failed for good, or ctx's error. An id whose job belongs
// to another task is refused with an error matching ErrWrongTask that names
// both tasks.
func (t *Task[A, R]) Await(ctx context.Context, id string) (R, error) {
	var zero R
	c, err := t.clientOrDefault()
	if err != nil {
		return zero, err
	}
	// A job still pending, running or dead says its task; a finished one
	// says it in its result record (decodeRecord).
	if s, err := c.q.Jobs.Lookup(ctx, id); err == nil && ofAnotherTask(s.Name, t.name) {
		return zero, wrongTask(id, s.Name, t.name)
	}
	return t.await(ctx, c, id)
}

func (t *Task[A, R]) await(ctx context.Context, c *Client, id string) (R, error) {
	defer c.warnIfUnserved(id)()
	rec, err := c.waiter.Wait(ctx, id, c.lookupResult)
	if err != nil {
		var zero R
		return zero, err
	}
	if rec.Value, err = c.payloads.Unpack(queue.PurposeResult, rec.ID, rec.Value); err != nil && !ofAnotherTask(rec.Name, t.name) {
		var zero R
		return zero, fmt.Errorf("bananas: result of %s job %s: %w", t.name, rec.ID, err)
	}
	rec.Error = c.openError(rec.ID, rec.Error)
	return decodeRecord[R](t.name, rec)
}

// ofAnotherTask reports whether a job whose stored task name is stored
// belongs to another task than want. No name (a record from before records
// named their task) and queue.UnknownTask (a job whose own name could not be
// read: garbage) belong to nobody in particular.
func ofAnotherTask(stored, want string) bool {
	return stored != "" && stored != queue.UnknownTask && stored != want
}

func wrongTask(id, is, want string) error {
	return fmt.Errorf("%w: job %s is a %s job, not %s: await it with the %s stub", ErrWrongTask, id, is, want, is)
}

// Call enqueues one job and awaits its result. A job that keeps nothing of
// its success (ResultTTL(0)) is refused: it could complete before the wait
// begins, and then leave nothing to find.
func (t *Task[A, R]) Call(ctx context.Context, args A, opts ...Option) (R, error) {
	var zero R
	if cfg, err := t.config(opts); err == nil && cfg.keepNothing {
		return zero, fmt.Errorf("bananas: call %s: its job keeps nothing of its success (result_ttl=0, runtime.ResultTTL(0)), so its end could pass before the wait begins: use Enqueue, or keep the result (runtime.ResultTTL(time.Minute))", t.name)
	}
	id, err := t.Enqueue(ctx, args, opts...)
	if err != nil {
		return zero, err
	}
	c, err := t.clientOrDefault()
	if err != nil {
		return zero, err
	}
	return t.await(ctx, c, id) // its own job: no need to look its task up
}

// decodeRecord turns a result record into the task's result, or its
// failure; a record of another task's job is refused (records written
// before records named their task name none, and are taken as they are).
func decodeRecord[R any](name string, rec results.Record) (R, error) {
	var out R
	if ofAnotherTask(rec.Name, name) {
		return out, wrongTask(rec.ID, rec.Name, name)
	}
	if !rec.OK {
		return out, &JobError{ID: rec.ID, Name: name, Message: rec.Error, Attempts: rec.Attempts, Canceled: rec.Canceled, Expired: rec.Expired}
	}
	if len(rec.Value) > 0 {
		if err := decode(rec.Value, &out); err != nil {
			return out, fmt.Errorf("bananas: decode result of %s job %s: %w", name, rec.ID, err)
		}
	}
	return out, nil
}

// lookupResult is the stored-result fallback of Await.
func (c *Client) lookupResult(ctx context.Context, id string) ([]byte, error) {
	b, err := c.q.Jobs.Result(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	return b, err
}

// enqueueSharded writes jobs of cfg's route with one Enqueue per shard they
// go to, and returns the holders in the jobs' order. Jobs without a key
// share one shard (jobConfig.shard): only keys (a flow's shard), unique keys
// and chosen ids of other shapes spread a batch over several calls, each all or nothing on
// its own. Should one fail, those before it are stored: stored says which
// jobs (nil when none is), so that a caller does not enqueue them twice.
func (c *Client) enqueueSharded(ctx context.Context, cfg jobConfig, jobs []queue.NewJob, now time.Time) (holders []string, stored []bool, err error) {
	var shards []string
	byShard := map[string][]int{}
	for i := range jobs {
		s := c.shardOf(cfg, &jobs[i])
		if _, ok := byShard[s]; !ok {
			shards = append(shards, s)
		}
		byShard[s] = append(byShard[s], i)
	}
	if len(shards) == 1 {
		holders, err = c.q.Jobs.Enqueue(ctx, shards[0], cfg.priority, jobs, now)
		return holders, nil, err
	}
	holders = make([]string, len(jobs))
	for n, s := range shards {
		idx := byShard[s]
		part := make([]queue.NewJob, len(idx))
		for k, i := range idx {
			part[k] = jobs[i]
		}
		h, err := c.q.Jobs.Enqueue(ctx, s, cfg.priority, part, now)
		if err != nil {
			if n == 0 {
				return nil, nil, err
			}
			return nil, stored, err
		}
		if stored == nil {
			stored = make([]bool, len(jobs))
		}
		for _, i := range idx {
			stored[i] = true
		}
		for k, i := range idx {
			holders[i] = h[k]
		}
	}
	return holders, nil, nil
}

// keyOfStored is the key (KeyBy) of stored args of t.
func (t *Task[A, R]) keyOfStored(b []byte) (string, error) {
	if t.keyBy == nil {
		return "", nil
	}
	var a A
	if err := decode(b, &a); err != nil {
		return "", fmt.Errorf("decode args of %s for its key: %w", t.name, err)
	}
	key := t.keyBy(a)
	if err := queue.CheckKey(key); err != nil {
		return "", fmt.Errorf("the key of the args of %s: %w", t.name, err)
	}
	return key, nil
}

// keyOf returns whether a job of the task with args and cfg is keyed, and
// its key: the Key option's, else KeyBy's, else "" for a task with limits
// (its jobs are one flow, limited together).
func (t *Task[A, R]) keyOf(cfg jobConfig, args A) (keyed bool, key string, err error) {
	switch {
	case cfg.hasKey:
		return true, cfg.key, nil // checked by Key
	case t.keyBy != nil:
		key = t.keyBy(args)
		if err := queue.CheckKey(key); err != nil {
			return true, "", fmt.Errorf("bananas: enqueue %s: the key of the job's args: %w", t.name, err)
		}
		return true, key, nil
	case !t.limits.IsZero():
		return true, "", nil
	}
	return false, "", nil
}

// Field describes one field of a task's arguments, for people and tools (the
// CLI, GET /api/v1/tasks): admin's, under its own name here, as the
// generated code that passes it to Describe imports runtime only.
type Field = admin.Field

// uniqueWhat says what a unique key is made of.
func uniqueWhat(cfg jobConfig) string {
	if len(cfg.uniq.by) > 0 {
		return "the same " + strings.Join(cfg.uniq.by, ", ")
	}
	return "identical args"
}

// untilOr is u, or the default UntilEnded.
func untilOr(u Until) Until {
	if u == "" {
		return UntilEnded
	}
	return u
}

// busyKey says which key an on_busy=drop enqueue found busy.
func busyKey(task, key string, limit int) string {
	return fmt.Sprintf("key %q of task %s is busy: %d of its jobs run or wait (max_running=%d, on_busy=drop)", key, task, limit, limit)
}
