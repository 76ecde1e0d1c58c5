package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/ext"
	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// Step is one step of a workflow whose result is an R: a job of a task
// (Task.Step, Then) or the gathered results of several steps (Gather).
// Steps are values that name nodes of a graph: one Step used as the
// predecessor of two others is one step, run once. The step a workflow is
// enqueued from is its final step: every step it comes after is part of
// the workflow, and its result is the workflow's.
type Step[R any] struct {
	node *stepNode
}

// stepNode is a step of the graph, as the typed calls build it.
type stepNode struct {
	task   string // the task's wire name; "" for a gather
	after  []*stepNode
	args   []byte // a first step's args (msgpack)
	argErr error  // encoding its args failed
	cfg    func(*Client) (jobConfig, error)
	keyed  func(c *Client) (keyed, known bool, key string)
	client *Client // the task's own client (With), or nil for the default
	name   string  // the task's Go variable, for messages
	label  string  // the step's label as given (the HTTP API's "id"); "": made from its task's name
	zero   bool    // stands for a zero Step given as a predecessor: refused at submission
	// A wait's (Sleep, WaitSignal): its kind, duration or timeout, signal
	// name and payload type.
	wait   record.StepKind
	dur    time.Duration
	signal string
	gotype string
}

// Step is a first step of a workflow: a job of t with args.
func (t *Task[A, R]) Step(args A, opts ...Option) Step[R] {
	n := t.stepNode(opts)
	n.args, n.argErr = encode(args)
	if n.argErr == nil && t.keyBy != nil {
		key := t.keyBy(args)
		n.keyed = func(*Client) (bool, bool, string) { return true, true, key }
	}
	return Step[R]{n}
}

func (t *Task[A, R]) stepNode(opts []Option) *stepNode {
	n := &stepNode{task: t.name, client: t.client, name: t.varName}
	n.cfg = func(*Client) (jobConfig, error) { return t.config(opts) }
	n.keyed = func(c *Client) (bool, bool, string) {
		cfg, err := t.config(opts)
		switch {
		case err == nil && cfg.hasKey:
			return true, true, cfg.key
		case t.keyBy != nil:
			return true, false, ""
		case !t.limits.IsZero():
			return true, true, ""
		}
		return false, true, ""
	}
	return n
}

// Then is a step of next that starts when prev completed, with prev's
// result as its args: the compiler checks that next takes what prev
// returns.
func Then[R, S any](prev Step[R], next *Task[R, S], opts ...Option) Step[S] {
	n := next.stepNode(opts)
	n.after = []*stepNode{prev.node}
	return Step[S]{n}
}

// Gather is a step that completes when every one of steps completed, with
// their results in the order given: Then(Gather(b, c), join) runs join
// with []R{b's, c's}. It runs no job of its own.
func Gather[R any](steps ...Step[R]) Step[[]R] {
	n := &stepNode{}
	for _, s := range steps {
		n.after = append(n.after, s.node)
	}
	return Step[[]R]{n}
}

// WorkflowError is what Await returns for a workflow that failed or was
// canceled: the step (its label), its job, and what ended it.
type WorkflowError struct {
	Workflow string
	Step     string
	JobID    string
	Err      error
}

func (e *WorkflowError) Error() string {
	return fmt.Sprintf("bananas: workflow %s: step %s (job %s): %v", e.Workflow, e.Step, e.JobID, e.Err)
}

func (e *WorkflowError) Unwrap() error { return e.Err }

// ErrWorkflowNotFound: no workflow of that id (never submitted, or its
// record expired).
var ErrWorkflowNotFound = admin.ErrWorkflowNotFound

// Enqueue submits the workflow that ends in s — s and every step it comes
// after — in one call, and returns its id: every step is stored or none
// is. The first steps' jobs are made at once; each other step's when its
// predecessors completed.
func (s Step[R]) Enqueue(ctx context.Context) (string, error) {
	if s.node == nil {
		return "", errors.New("bananas: enqueue workflow: a zero Step")
	}
	c, err := s.node.clientOrDefault()
	if err != nil {
		return "", err
	}
	id, _, err := c.submitWorkflow(ctx, orderSteps(s.node))
	return id, err
}

// submitWorkflow submits the workflow of nodes, each after its
// predecessors, the final step last, and returns its id and its steps as
// stored (labels and job ids).
func (c *Client) submitWorkflow(ctx context.Context, nodes []*stepNode) (id string, steps []record.NewStep, err error) {
	e := &Enqueueing{Task: nodes[len(nodes)-1].task, Count: len(nodes), Workflow: true}
	err = c.hooked(ctx, e, jobConfig{}, func(ctx context.Context, cfg jobConfig) (err error) {
		id, steps, err = c.submitSteps(ctx, nodes, cfg.headers)
		e.IDs = []string{id}
		return err
	})
	return id, steps, err
}

// submitSteps is submitWorkflow without its hooks; headers go to every
// step's job, over its own.
func (c *Client) submitSteps(ctx context.Context, nodes []*stepNode, headers map[string]string) (string, []record.NewStep, error) {
	if len(nodes) > record.MaxSteps {
		return "", nil, fmt.Errorf("bananas: enqueue workflow: %d steps, over the limit of %d", len(nodes), record.MaxSteps)
	}
	now := c.q.Now()
	id := ulid.MustNew(ulid.Timestamp(now), ulid.DefaultEntropy()).String()
	steps, err := c.workflowSteps(ctx, id, nodes, now, headers)
	if err != nil {
		return "", nil, err
	}
	if err := c.workflowRunner().Submit(ctx, id, steps, len(steps)-1); err != nil {
		return "", nil, fmt.Errorf("bananas: enqueue workflow: %w", err)
	}
	return id, steps, nil
}

// clientOrDefault is the client of the workflow ending in n: that of the
// first of its steps whose task has one (With), else the default.
func (n *stepNode) clientOrDefault() (*Client, error) {
	for _, s := range orderSteps(n) {
		if s.client != nil {
			return s.client, nil
		}
	}
	if c := Default(); c != nil {
		return c, nil
	}
	return nil, errors.New("bananas: workflow has no client: call runtime.SetDefault(client) once at start, or bind a task of one of its steps with With(client)")
}

// orderSteps lists the steps final comes after, each once, predecessors
// before successors, final last.
func orderSteps(final *stepNode) []*stepNode {
	var out []*stepNode
	seen := map[*stepNode]bool{}
	var visit func(n *stepNode)
	visit = func(n *stepNode) {
		if n == nil {
			n = &stepNode{zero: true}
		}
		if seen[n] {
			return
		}
		seen[n] = true
		for _, p := range n.after {
			visit(p)
		}
		out = append(out, n)
	}
	visit(final)
	return out
}

// workflowSteps turns the typed steps into the record's, with their labels
// (the task's name, then name-2, name-3 ... for its further steps), job ids
// and templates.
func (c *Client) workflowSteps(ctx context.Context, wf string, nodes []*stepNode, now time.Time, headers map[string]string) ([]record.NewStep, error) {
	index := map[*stepNode]int{}
	seen, taken := map[string]int{}, map[string]bool{}
	steps := make([]record.NewStep, len(nodes))
	for k, n := range nodes {
		if n.zero {
			return nil, errors.New("bananas: enqueue workflow: a zero Step, not made by Task.Step, Then or Gather, is given as a predecessor")
		}
		index[n] = k
		base := n.task
		switch {
		case n.wait == record.KindTimer:
			base = "sleep"
		case n.wait == record.KindSignal:
			base = n.signal
		case base == "":
			base = "gather"
		}
		label := n.label
		for label == "" || taken[label] {
			seen[base]++
			label = base
			if seen[base] > 1 {
				label = base + "-" + strconv.Itoa(seen[base])
			}
		}
		taken[label] = true
		s := record.NewStep{Label: label, Gather: n.task == "" && n.wait == record.KindTask}
		for _, p := range n.after {
			s.After = append(s.After, index[p])
		}
		if n.wait != record.KindTask {
			s.Kind, s.Wait, s.Signal, s.Type = n.wait, n.dur, n.signal, n.gotype
			steps[k] = s
			continue
		}

		if !s.Gather {
			if len(n.after) == 0 {
				if n.argErr != nil {
					return nil, fmt.Errorf("bananas: enqueue workflow: step %s: encode args: %w", label, n.argErr)
				}
				if err := checkPayload("args of step ", label, len(n.args), c.maxPayload); err != nil {
					return nil, err
				}
				var err error
				if s.Args, err = c.sealWorkflowValue(wf, n.args); err != nil {
					return nil, fmt.Errorf("bananas: enqueue workflow: step %s: %w", label, err)
				}
			}
			var err error
			if s.Template, s.JobID, err = c.stepJob(ctx, wf, k, n, now, headers); err != nil {
				return nil, fmt.Errorf("bananas: enqueue workflow: step %s: %w", label, err)
			}
		}
		steps[k] = s
	}
	return steps, nil
}

// stepJob resolves step k's options into its template, and fixes its job
// id: on the shard its job goes to, or of a shape of its own (located by
// searching the routes) for a keyed step of a sharded route whose key is
// read from args not known yet.
func (c *Client) stepJob(ctx context.Context, wf string, k int, n *stepNode, now time.Time, headers map[string]string) ([]byte, string, error) {
	cfg, err := n.cfg(c)
	if err != nil {
		return nil, "", err
	}
	cfg.headers = withHeaders(cfg.headers, headers)
	if err := queue.CheckHeaders(cfg.headers); err != nil {
		return nil, "", err
	}
	if err := checkStepConfig(cfg); err != nil {
		return nil, "", err
	}
	retries := c.maxRetries
	if cfg.hasRetries {
		retries = cfg.maxRetries
	}
	// cfg.resultTTL, never KeepNothing: the workflow reads a step's end
	// from its job's record, so a step keeps it even under ResultTTL(0).
	tpl := workflows.Template{Name: n.task, Route: cfg.route, Priority: cfg.priority, MaxRetries: retries,
		Timeout: cfg.timeout.Milliseconds(), ResultTTL: cfg.resultTTL.Milliseconds(), Backoff: cfg.backoff.Milliseconds(), Description: cfg.description, Headers: cfg.headers}
	keyed, known, key := n.keyed(c)
	tpl.Keyed = keyed
	if keyed && known {
		tpl.Key = &key
	}
	b, err := json.Marshal(tpl)
	if err != nil {
		return nil, "", err
	}
	var shard string
	switch {
	case keyed && known:
		shard = c.flowShard(ctx, cfg.route, n.task, key)
	case keyed && c.q.ShardCount(ctx, cfg.route) > 1:
		return b, wf + "-" + strconv.Itoa(k), nil
	default:
		shard = c.q.ShardNow(ctx, cfg.route)
	}
	return b, queue.NewID(shard, now), nil
}

// checkStepConfig refuses the options that do not apply to a workflow's
// step, whether given to Step or Then or as its task's defaults.
func checkStepConfig(cfg jobConfig) error {
	switch {
	case cfg.uniqueTTL > 0, cfg.id != "":
		return errors.New("runtime.Unique and runtime.WithID do not apply to a workflow's step: its job id is the workflow's to choose")
	case cfg.delay > 0, !cfg.runAt.IsZero():
		return errors.New("runtime.Delay and runtime.At do not apply to a workflow's step: it starts when its predecessors complete")
	}
	return nil
}

// makeSteps makes the jobs of steps of workflow wf: the runner's Make. The
// jobs of one shard and priority go in one call.
func (c *Client) makeSteps(ctx context.Context, wf string, steps []record.ReadyStep, own bool) []error {
	errs := make([]error, len(steps))
	type group struct {
		shard string
		prio  Priority
	}
	var order []group
	jobs := map[group][]queue.NewJob{}
	index := map[group][]int{}
	m := &workflows.Maker{
		CheckArgs:   func(task string, args []byte) error { return checkPayload("args of ", task, len(args), c.maxPayload) },
		KeyOf:       keyOfStoredArgs,
		AfterHeader: AfterHeader,
		OpenArgs:    c.stepArgs,
		PackArgs:    func(id string, args []byte) ([]byte, error) { return c.payloads.Pack(queue.PurposeArgs, id, args) },
	}
	for i, s := range steps {
		j, route, prio, err := m.Job(wf, s, own)
		if err != nil {
			errs[i] = err
			continue
		}
		g := group{c.shardOf(jobConfig{route: route}, &j), prio}
		if _, ok := jobs[g]; !ok {
			order = append(order, g)
		}
		jobs[g], index[g] = append(jobs[g], j), append(index[g], i)
	}
	for _, g := range order {
		_, err := c.q.Jobs.Enqueue(ctx, g.shard, g.prio, jobs[g], c.q.Now())
		for _, i := range index[g] {
			errs[i] = err
		}
		if err == nil {
			c.metrics.Enqueued(queue.ShardBase(g.shard), string(g.prio), jobs[g][0].Name, len(jobs[g]))
		}
	}
	return errs
}

// workflowsKey keeps the client's runner of workflows in its extensions.
type workflowsKey struct{}

// workflowRunner is the client's runner of workflows, made at its first use.
func (c *Client) workflowRunner() *workflows.Runner {
	return ext.Get(&c.ext, workflowsKey{}, func() *workflows.Runner {
		return &workflows.Runner{
			Store: redisstore.New(c.q), Make: c.makeSteps, CancelJob: c.cancelStepJob, StepResult: c.stepResult,
			TTLs:  record.TTLs{Completed: DefaultWorkflowTTL, Failed: DefaultFailedWorkflowTTL},
			Grace: 5 * time.Second,
		}
	})
}

// Workflow records are kept this long once ended: a completed workflow's,
// and a failed or canceled one's, which a retry may run again.
const (
	DefaultWorkflowTTL       = 24 * time.Hour
	DefaultFailedWorkflowTTL = 7 * 24 * time.Hour
)

// cancelStepJob cancels the job of a step; a job gone or already ended is
// not an error.
func (c *Client) cancelStepJob(ctx context.Context, id string) error {
	_, err := c.cancelJob(ctx, id)
	if errors.Is(err, ErrJobNotFound) || errors.Is(err, ErrWrongState) {
		return nil
	}
	return err
}

// stepNodeJSON is a step of t for a JSON submission: a first step with args
// read by t's strict decoder, or one whose args are its predecessors'
// results, with t's defaults as Step and Then give them.
func (t *Task[A, R]) stepNodeJSON(args []byte, first bool) (*stepNode, error) {
	if !first {
		return t.stepNode(nil), nil
	}
	a, err := t.decodeArgsJSON(args)
	if err != nil {
		return nil, err
	}
	return t.Step(a).node, nil
}
