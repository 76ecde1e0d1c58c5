package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A workflow is a graph of steps, each an ordinary job on its own route,
// that starts only when its predecessors completed, with their results as
// its args. Its record is one hash under its own hash tag:
//
//	<ns>:workflow:{<id>}   HASH  status, steps, their states, job ids, results (scripts/_workflow.lua)
//	<ns>:workflows         ZSET  id of a workflow not yet settled -> when its keeper looks at it (ms)
//	<ns>:workflows:all     ZSET  id of every workflow whose record may still exist -> created (ms) (workflow_list.go)
//	<ns>:workflow:{<id>}   channel: the workflow ended (completed, failed or canceled)
//
// Its steps' jobs live on other slots than its record, so no script both
// ends a step's job and makes its successor's. Each step's job id is fixed
// when the workflow is submitted, and a job is made only with its chosen
// id, so making it twice makes it once: the worker that ends a step's job
// advances the workflow (AdvanceWorkflow) and makes the jobs it returns,
// then says so (StepsCreated); a worker that dies between any two of those
// calls leaves the workflow in the index, where the keeper finds it and
// does the rest (DueWorkflows).
//
//	step:  waiting --(predecessors completed)--> creating --(job made)--> created
//	         |                                     |                       |
//	         +--(a predecessor failed: canceled)   +--(workflow canceled)  +--> completed | failed | canceled

// Workflows is the workflow records and their transitions (this file) and
// the list of every workflow (workflow_list.go). Ends of steps of one
// workflow that finish together go out in one script run (advances).
type Workflows struct {
	q        *Queue
	advances *committer[string, stepEnd, WorkflowAdvance] // coalesced ends of steps, by workflow
}

func newWorkflows(q *Queue) Workflows {
	wf := Workflows{q: q}
	wf.advances = newCommitter(1, 0, wf.advanceMany)
	return wf
}

// StepState is where a workflow step is, as its record holds it.
type StepState byte

const (
	StepWaiting   StepState = 'w' // for its predecessors
	StepCreating  StepState = 'c' // its predecessors completed; its job is being made
	StepCreated   StepState = 'r' // its job exists: pending, scheduled or running
	StepCompleted StepState = 'd'
	StepFailed    StepState = 'f'
	StepCanceled  StepState = 'x'
)

// Workflow statuses, as the record holds them.
const (
	WorkflowRunning   = "running"
	WorkflowCompleted = "completed"
	WorkflowFailed    = "failed"
	WorkflowCanceled  = "canceled"
)

// WorkflowStep is one step of a workflow to submit.
type WorkflowStep struct {
	Label string
	// JobID is the id of the step's job, fixed now and made only with it;
	// "" for a gather.
	JobID string
	// Template is how the caller makes the step's job from its args: opaque
	// here, returned with each ReadyStep.
	Template []byte
	// After lists the predecessors' indices, each before this step, in the
	// order their results are given (several: an array).
	After []int
	// Args are the args of a step without predecessors (msgpack).
	Args []byte
	// Gather: no job; the step completes with the array of its
	// predecessors' results as soon as they all completed.
	Gather bool
}

// ReadyStep is a step whose predecessors completed, whose job the caller
// makes with JobID, Template and Args (its predecessors' results), then
// reports with StepsCreated.
type ReadyStep struct {
	Index    int
	JobID    string
	Template []byte
	Args     []byte
	// After are the trails its predecessors' completed runs left
	// (AdvanceWorkflow), comma-separated, at most MaxAfterTrails; a
	// Gather's stand for theirs. "" when none left one.
	After string
}

// MaxAfterTrails bounds ReadyStep.After: a step after a Gather of a
// thousand steps is given the trails of the first few (looked for among
// its first 64 predecessors).
const MaxAfterTrails = 8

// stepEndCodes are the words wf_advance.lua reads for how a step's job
// ended (AdvanceWorkflow): completed, dead or canceled.
var stepEndCodes = map[Ending]string{EndCompleted: "d", EndDead: "f", EndCanceled: "x"}

// ErrWorkflowNotFound: no workflow of that id (never submitted, or its
// record expired).
var ErrWorkflowNotFound = errors.New("workflow not found")

// MaxWorkflowSteps bounds a workflow: its record is one hash, and each
// submission one script call.
const MaxWorkflowSteps = 10000

// CheckWorkflowID refuses an id that cannot name a workflow record.
func CheckWorkflowID(id string) error {
	if id == "" || len(id) > 200 || strings.ContainsAny(id, "{} \t\r\n") {
		return fmt.Errorf("invalid workflow id %q: 1-200 characters without spaces or braces", id)
	}
	return nil
}

// Submit stores workflow id with steps, final the step whose result
// is the workflow's, and returns the steps to make now. The workflow is in
// the index, looked at by the keeper after grace, before its record exists:
// a submitter that dies between the two leaves an entry the keeper drops.
//
// own is true when this call stored the workflow: its steps to make are
// its own, made by no one else before it. A retried call that finds the
// workflow stored returns the steps still creating, not its own.
func (wf Workflows) Submit(ctx context.Context, id string, steps []WorkflowStep, final int, grace time.Duration, now time.Time) (ready []ReadyStep, own bool, err error) {
	if err := CheckWorkflowID(id); err != nil {
		return nil, false, err
	}
	if len(steps) == 0 || len(steps) > MaxWorkflowSteps {
		return nil, false, fmt.Errorf("a workflow has 1 to %d steps, got %d", MaxWorkflowSteps, len(steps))
	}
	if final < 0 || final >= len(steps) {
		return nil, false, fmt.Errorf("final step %d of %d", final, len(steps))
	}
	args := []any{now.UnixMilli(), len(steps), final, id}
	next := make([][]int, len(steps))
	for k, s := range steps {
		for _, p := range s.After {
			if p < 0 || p >= k {
				return nil, false, fmt.Errorf("step %d (%s) comes after step %d: a step comes after steps listed before it", k, s.Label, p)
			}
			next[p] = append(next[p], k)
		}
		if s.Gather && len(s.After) == 0 {
			return nil, false, fmt.Errorf("step %d (%s) gathers nothing", k, s.Label)
		}
	}
	var roots []ReadyStep
	for k, s := range steps {
		f := strconv.Itoa(k)
		state := "w"
		if len(s.After) == 0 {
			state = "c"
			roots = append(roots, ReadyStep{Index: k, JobID: s.JobID, Template: s.Template, Args: s.Args})
		}
		args = append(args, "l:"+f, s.Label, "s:"+f, state, "p:"+f, len(s.After))
		if s.Gather {
			args = append(args, "v:"+f, "1")
		} else {
			args = append(args, "j:"+f, s.JobID, "t:"+f, s.Template)
		}
		if len(s.After) > 0 {
			args = append(args, "a:"+f, joinInts(s.After))
		} else {
			args = append(args, "x:"+f, s.Args)
		}
		if len(next[k]) > 0 {
			args = append(args, "nx:"+f, joinInts(next[k]))
		}
	}
	// Both indices first, each entry harmless should the record never come:
	// the keeper and the list drop an entry without a record.
	keys := []string{WorkflowKey(wf.q.ns, id), WorkflowList(wf.q.ns)}
	pipe := wf.q.rdb.Pipeline()
	pipe.ZAdd(ctx, WorkflowIndex(wf.q.ns), redis.Z{Score: float64(now.Add(grace).UnixMilli()), Member: id})
	if wf.q.cluster {
		// The list lives on another node than the record: the script
		// cannot write it.
		pipe.ZAddNX(ctx, keys[1], redis.Z{Score: float64(now.UnixMilli()), Member: id})
		keys = keys[:1]
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false, fmt.Errorf("submit workflow %s: %w", id, err)
	}
	res, err := wf.q.s.wfSubmit.Run(ctx, wf.q.rdb, keys, args...).Slice()
	if err != nil {
		return nil, false, fmt.Errorf("submit workflow %s: %w", id, err)
	}
	if len(res) == 1 && str(res[0]) == "new" {
		return roots, true, nil
	}
	ready, err = readySteps(res, 1)
	return ready, false, err
}

// WorkflowAdvance is what AdvanceWorkflow, RetryWorkflow and the keeper
// learn: the workflow's status, the step that failed or canceled it (-1
// when none did), and the steps to make now: Ready, which this call marked
// creating (AdvanceWorkflow: no other caller was given them), and Again,
// which it found creating (another caller may be making them, or may have
// made some).
type WorkflowAdvance struct {
	Status string
	Why    int
	Ready  []ReadyStep
	Again  []ReadyStep
}

// WorkflowTTLs are how long an ended workflow's record is kept.
type WorkflowTTLs struct {
	Completed, Failed time.Duration
}

// Advance records that job, the job of step of workflow id, ended
// as how said with value (a completed job's result, else its error), and
// returns the workflow's status and the steps to make now. The ends of one
// workflow's steps that come together go in one call (wf_advance.lua takes
// several); the steps to make are returned to one of their callers.
// ErrWorkflowNotFound when the record is gone.
//
// trail is what a completed run left for the steps after it (at most
// MaxTrail bytes without commas, else it is dropped): each step made later
// is given those of its predecessors in ReadyStep.After.
func (wf Workflows) Advance(ctx context.Context, id string, step int, job string, how Ending, value []byte, trail string, keep WorkflowTTLs) (WorkflowAdvance, error) {
	if _, ok := stepEndCodes[how]; !ok {
		return WorkflowAdvance{}, fmt.Errorf("advance workflow %s: step %d's job ended %s: a step ends completed, dead or canceled", id, step, how)
	}
	if CheckTrail(trail) != nil {
		trail = ""
	}
	return wf.advances.do(ctx, id, stepEnd{step, job, how, value, trail, keep})
}

// MaxTrail bounds a run's trail (AdvanceWorkflow): a W3C traceparent is 55
// bytes.
const MaxTrail = 128

// CheckTrail says what is wrong with trail as a run's trail, or nil: at
// most MaxTrail bytes of printable ASCII without commas, which separate
// the trails of a step's predecessors.
func CheckTrail(trail string) error {
	if len(trail) > MaxTrail {
		return fmt.Errorf("trail of %d bytes, at most %d", len(trail), MaxTrail)
	}
	for i := 0; i < len(trail); i++ {
		if c := trail[i]; c < ' ' || c > '~' || c == ',' {
			return fmt.Errorf("trail holds byte %#x at %d: printable ASCII without commas", c, i)
		}
	}
	return nil
}

// stepEnd is one end given to AdvanceWorkflow.
type stepEnd struct {
	step  int
	job   string
	how   Ending
	value []byte
	trail string
	keep  WorkflowTTLs
}

// advanceMany runs wf_advance.lua for ends of workflow id; the first end's
// answer carries the steps to make, the others' only the status.
func (wf Workflows) advanceMany(ctx context.Context, id string, ends []stepEnd) ([]WorkflowAdvance, error) {
	keep := ends[0].keep
	args := make([]any, 0, 4+5*len(ends))
	args = append(args, wf.q.Now().UnixMilli(), keep.Completed.Milliseconds(), keep.Failed.Milliseconds(), WorkflowChannel(wf.q.ns, id))
	for _, e := range ends {
		args = append(args, e.step, e.job, stepEndCodes[e.how], e.value, e.trail)
	}
	res, err := wf.q.s.wfAdvance.Run(ctx, wf.q.rdb, []string{WorkflowKey(wf.q.ns, id)}, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("advance workflow %s: %w", id, err)
	}
	if len(res) == 1 {
		return nil, fmt.Errorf("workflow %s: %w", id, ErrWorkflowNotFound)
	}
	a := WorkflowAdvance{Status: str(res[0]), Why: -1}
	if w, err := strconv.Atoi(str(res[1])); err == nil {
		a.Why = w
	}
	own, _ := res[2].(int64)
	if a.Ready, err = readySteps(res, 3); err != nil {
		return nil, err
	}
	if int(own) < len(a.Ready) {
		a.Ready, a.Again = a.Ready[:own:own], a.Ready[own:]
	}
	outs := make([]WorkflowAdvance, len(ends))
	outs[0] = a
	for i := 1; i < len(outs); i++ {
		outs[i] = WorkflowAdvance{Status: a.Status, Why: a.Why}
	}
	return outs, nil
}

// StepsCreated records that the jobs of steps of workflow id were made
// (each under its JobID), and returns the ids of those whose steps no
// longer want them: the workflow was canceled meanwhile, or a retry gave
// the step a fresh job id. The caller cancels them.
func (wf Workflows) StepsCreated(ctx context.Context, id string, steps []ReadyStep) ([]string, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 2*len(steps))
	for _, s := range steps {
		args = append(args, s.Index, s.JobID)
	}
	out, err := wf.q.s.wfCreated.Run(ctx, wf.q.rdb, []string{WorkflowKey(wf.q.ns, id)}, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("workflow %s: record created steps: %w", id, err)
	}
	return out, nil
}

// Cancel cancels workflow id: its steps that have not run are
// canceled, and the ids of the jobs of its steps that were made and may
// still run are returned, for the caller to cancel. The status after the
// call is "canceled", or "completed" for a workflow already completed.
func (wf Workflows) Cancel(ctx context.Context, id string, keep time.Duration, now time.Time) (status string, jobs []string, err error) {
	out, err := wf.q.s.wfCancel.Run(ctx, wf.q.rdb, []string{WorkflowKey(wf.q.ns, id)}, now.UnixMilli(), keep.Milliseconds(), WorkflowChannel(wf.q.ns, id)).StringSlice()
	if err != nil {
		return "", nil, fmt.Errorf("cancel workflow %s: %w", id, err)
	}
	if out[0] == "missing" {
		return "", nil, fmt.Errorf("workflow %s: %w", id, ErrWorkflowNotFound)
	}
	return out[0], out[1:], nil
}

// Retry runs again the failed and canceled steps of workflow id
// listed in ids (step index -> the fresh job id it runs under; "" keeps
// its job id: a gather's, or a job that may still run), and returns the
// steps to make now.
func (wf Workflows) Retry(ctx context.Context, id string, ids map[int]string, now time.Time) (WorkflowAdvance, error) {
	args := []any{now.UnixMilli()}
	for k, j := range ids {
		args = append(args, k, j)
	}
	res, err := wf.q.s.wfRetry.Run(ctx, wf.q.rdb, []string{WorkflowKey(wf.q.ns, id)}, args...).Slice()
	if err != nil {
		return WorkflowAdvance{}, fmt.Errorf("retry workflow %s: %w", id, err)
	}
	if str(res[0]) == "missing" {
		return WorkflowAdvance{}, fmt.Errorf("workflow %s: %w", id, ErrWorkflowNotFound)
	}
	a := WorkflowAdvance{Status: str(res[0]), Why: -1}
	a.Ready, err = readySteps(res, 1)
	return a, err
}

// Due takes up to n workflows whose time in the index has come,
// putting each back at next.
func (wf Workflows) Due(ctx context.Context, now, next time.Time, n int) ([]string, error) {
	return wf.q.s.wfDue.Run(ctx, wf.q.rdb, []string{WorkflowIndex(wf.q.ns)}, now.UnixMilli(), next.UnixMilli(), n).StringSlice()
}

// Settle takes workflow id out of the index: it has ended and no
// step of it is left to make or to watch.
func (wf Workflows) Settle(ctx context.Context, id string) error {
	return wf.q.rdb.ZRem(ctx, WorkflowIndex(wf.q.ns), id).Err()
}

// Watch has the keeper look at workflow id again at the latest at.
func (wf Workflows) Watch(ctx context.Context, id string, at time.Time) error {
	return wf.q.rdb.ZAddLT(ctx, WorkflowIndex(wf.q.ns), redis.Z{Score: float64(at.UnixMilli()), Member: id}).Err()
}

// WorkflowRecord is a snapshot of a workflow's record.
type WorkflowRecord struct {
	ID                 string
	Status             string
	Final              int
	Why                int // the step that failed or canceled it; -1 when none did
	CreatedAt, EndedAt time.Time
	Steps              []StepRecord
	TTL                time.Duration // how long the record is kept; 0 while it runs
}

// StepRecord is one step of a WorkflowRecord.
type StepRecord struct {
	Label, JobID string
	Template     []byte
	After        []int
	State        StepState
	Gather       bool
	Result       []byte // a completed step's (msgpack)
	Error        string // a failed or canceled step's
	Args         []byte // a step without predecessors
}

// Read reads the record of workflow id (one HGETALL, so one
// instant), or ErrWorkflowNotFound. A field that does not read (garbage)
// reads as empty, never as an error: the record is shown as it is.
func (wf Workflows) Read(ctx context.Context, id string) (*WorkflowRecord, error) {
	if err := CheckWorkflowID(id); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWorkflowNotFound, err)
	}
	key := WorkflowKey(wf.q.ns, id)
	pipe := wf.q.rdb.Pipeline()
	all := pipe.HGetAll(ctx, key)
	ttl := pipe.PTTL(ctx, key)
	_, err := pipe.Exec(ctx)
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	f := all.Val()
	w, err := workflowHead(id, f)
	if err != nil {
		return nil, err
	}
	if d := ttl.Val(); d > 0 {
		w.TTL = d
	}
	for k := range w.Steps {
		w.Steps[k] = stepRecord(f, strconv.Itoa(k))
	}
	return w, nil
}

// ReadEnd reads what an Await needs of workflow id: its status and,
// once it ended, the one step that tells how (the final step's result, or
// the failed or canceled step's error); the record's other steps are left
// zero. Two short reads instead of the whole record, which a workflow of
// many steps makes long: one while it runs.
func (wf Workflows) ReadEnd(ctx context.Context, id string) (*WorkflowRecord, error) {
	if err := CheckWorkflowID(id); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWorkflowNotFound, err)
	}
	key := WorkflowKey(wf.q.ns, id)
	head, err := wf.q.rdb.HMGet(ctx, key, "st", "n", "fin", "why").Result()
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	f := map[string]string{}
	for i, name := range []string{"st", "n", "fin", "why"} {
		if i < len(head) {
			f[name], _ = head[i].(string)
		}
	}
	w, err := workflowHead(id, f)
	if err != nil || w.Status == WorkflowRunning {
		return w, err
	}
	k := w.Why
	if w.Status == WorkflowCompleted || k < 0 {
		k = w.Final
	}
	if k < 0 || k >= len(w.Steps) {
		return w, nil
	}
	ks := strconv.Itoa(k)
	names := []string{"l:" + ks, "j:" + ks, "t:" + ks, "a:" + ks, "s:" + ks, "v:" + ks, "e:" + ks, "x:" + ks, "o:" + ks}
	vals, err := wf.q.rdb.HMGet(ctx, key, names...).Result()
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	for i, name := range names {
		if i < len(vals) {
			if v, ok := vals[i].(string); ok {
				f[name] = v
			}
		}
	}
	w.Steps[k] = stepRecord(f, ks)
	return w, nil
}

// workflowHead reads a record's own fields of f, with room for its steps;
// ErrWorkflowNotFound for none, or for a status or count that does not
// read (garbage: not a workflow these scripts can move).
func workflowHead(id string, f map[string]string) (*WorkflowRecord, error) {
	switch f["st"] {
	case WorkflowRunning, WorkflowCompleted, WorkflowFailed, WorkflowCanceled:
	default:
		return nil, fmt.Errorf("workflow %s: %w", id, ErrWorkflowNotFound)
	}
	n, _ := strconv.Atoi(f["n"])
	if n < 1 || n > MaxWorkflowSteps {
		return nil, fmt.Errorf("workflow %s: %w", id, ErrWorkflowNotFound)
	}
	w := &WorkflowRecord{ID: id, Status: f["st"], Why: -1, CreatedAt: parseMS(f["c"]), EndedAt: parseMS(f["f"]), Steps: make([]StepRecord, n)}
	w.Final, _ = strconv.Atoi(f["fin"])
	if why, err := strconv.Atoi(f["why"]); err == nil && why >= 0 && why < n {
		w.Why = why
	}
	return w, nil
}

// stepRecord reads step s's fields of f.
func stepRecord(f map[string]string, s string) StepRecord {
	st := StepState(0)
	if v := f["s:"+s]; len(v) == 1 {
		st = StepState(v[0])
	}
	r := StepRecord{
		Label: f["l:"+s], JobID: f["j:"+s], Template: []byte(f["t:"+s]), After: splitInts(f["a:"+s]), State: st,
		Gather: f["v:"+s] == "1", Error: f["e:"+s], Args: []byte(f["x:"+s]),
	}
	if v, ok := f["o:"+s]; ok {
		r.Result = []byte(v)
	}
	return r
}

// readySteps reads the (index, job id, template, args) entries of a
// workflow script's reply from res[from].
func readySteps(res []any, from int) ([]ReadyStep, error) {
	if (len(res)-from)%5 != 0 {
		return nil, fmt.Errorf("workflow script replied %d entries", len(res))
	}
	var out []ReadyStep
	for i := from; i+4 < len(res); i += 5 {
		k, err := strconv.Atoi(str(res[i]))
		if err != nil {
			return nil, fmt.Errorf("workflow script replied step %v", res[i])
		}
		out = append(out, ReadyStep{Index: k, JobID: str(res[i+1]), Template: []byte(str(res[i+2])), Args: []byte(str(res[i+3])), After: str(res[i+4])})
	}
	return out, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func joinInts(xs []int) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

func splitInts(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(p); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// CreatingSteps returns the steps of workflow id left creating, with what
// their jobs are made of.
func (wf Workflows) CreatingSteps(ctx context.Context, id string) (WorkflowAdvance, error) {
	return wf.Retry(ctx, id, nil, wf.q.Now())
}
