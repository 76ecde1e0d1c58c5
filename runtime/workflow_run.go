package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/scheduler"
)

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

// keyOfStoredArgs is the key of a step's job of task name, read from its
// args by the task's KeyBy: the process that makes the job must declare
// the task (link its generated code).
func keyOfStoredArgs(name string, args []byte) (string, error) {
	v, ok := declaredTasks.Load(name)
	if !ok || v.(*argsDecoder).keyOf == nil {
		return "", fmt.Errorf("task %s is keyed by its args, and this program does not declare it (or declares it twice with other types): link its generated code to make its steps", name)
	}
	return v.(*argsDecoder).keyOf(args)
}

// Await waits until workflow id, whose final step is s, ends, and returns
// the final step's result, or a *WorkflowError naming the step that failed
// or canceled it, or ctx's error. After a retry it waits again.
func (s Step[R]) Await(ctx context.Context, id string) (R, error) {
	var zero R
	if s.node == nil {
		return zero, errors.New("bananas: await workflow: a zero Step")
	}
	c, err := s.node.clientOrDefault()
	if err != nil {
		return zero, err
	}
	rec, err := c.awaitWorkflow(ctx, id)
	if err != nil {
		return zero, err
	}
	if rec.Status != queue.WorkflowCompleted {
		return zero, c.workflowError(ctx, rec)
	}
	var out R
	if b := rec.Steps[rec.Final].Result; len(b) > 0 {
		if err := decode(b, &out); err != nil {
			return zero, fmt.Errorf("bananas: decode result of workflow %s: %w", id, err)
		}
	}
	return out, nil
}

// awaitWorkflow waits for workflow id to end: completed, failed or
// canceled, and returns the record's status and the step that tells how
// (ReadWorkflowEnd). It listens before it reads, so no end is missed, and
// reads again every second in case an announcement was lost.
func (c *Client) awaitWorkflow(ctx context.Context, id string) (*queue.WorkflowRecord, error) {
	sub, err := c.listener.Subscribe(ctx, queue.WorkflowChannel(c.q.Namespace(), id))
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		reconnected := c.listener.Reconnected()
		rec, err := c.q.ReadWorkflowEnd(ctx, id)
		if errors.Is(err, queue.ErrWorkflowNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
		}
		if err != nil {
			return nil, err
		}
		if rec.Status != queue.WorkflowRunning {
			return rec, nil
		}
		select {
		case <-sub.C:
		case <-tick.C:
		case <-reconnected:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// workflowError is the error of rec, a workflow that failed or was
// canceled. Its JobError carries what `app job` shows of the step's job:
// its attempts (0 for a step that never ran: canceled before its job was
// made, or its job gone).
func (c *Client) workflowError(ctx context.Context, rec *queue.WorkflowRecord) error {
	e := &WorkflowError{Workflow: rec.ID}
	k := rec.Why
	if k < 0 {
		k = rec.Final
	}
	s := rec.Steps[k]
	e.Step, e.JobID = s.Label, s.JobID
	msg := s.Error
	if msg == "" {
		msg = rec.Status
	}
	name := ""
	if tpl, ok := readTemplate(s.Template); ok {
		name = tpl.Name
	}
	je := &JobError{ID: s.JobID, Name: name, Message: msg, Canceled: s.State == queue.StepCanceled || rec.Status == queue.WorkflowCanceled}
	if s.JobID != "" && !s.Gather {
		if info, err := c.Job(ctx, s.JobID); err == nil {
			je.Attempts = info.Attempts
		}
	}
	e.Err = je
	return e
}

// WorkflowInfo is a snapshot of a workflow.
type WorkflowInfo struct {
	ID string
	// Status is pending (no step has started), running, completed,
	// failed or canceled.
	Status             string
	CreatedAt, EndedAt time.Time
	Steps              []WorkflowStepInfo
	// Final is the index in Steps of the step whose result is the
	// workflow's; Result its result (msgpack) once completed.
	Final  int
	Result []byte
	// FailedStep is the label of the step that failed or canceled the
	// workflow; "" when none did.
	FailedStep string
}

// WorkflowStepInfo is one step of a WorkflowInfo.
type WorkflowStepInfo struct {
	Label string
	Name  string // its task; "" for a gather
	JobID string // "" for a gather
	// Status is its job's: pending (also while it waits for its
	// predecessors), scheduled, processing, completed, failed or canceled.
	Status Status
	After  []string // the labels of its predecessors, in order
	Error  string
}

// Workflow returns a snapshot of workflow id, or an error matching
// ErrWorkflowNotFound.
func (c *Client) Workflow(ctx context.Context, id string) (*WorkflowInfo, error) {
	rec, err := c.q.ReadWorkflow(ctx, id)
	if errors.Is(err, queue.ErrWorkflowNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	info := &WorkflowInfo{ID: id, Status: rec.Status, CreatedAt: rec.CreatedAt, EndedAt: rec.EndedAt, Final: rec.Final, Steps: make([]WorkflowStepInfo, len(rec.Steps))}
	jobs, err := c.createdJobs(ctx, rec)
	if err != nil {
		return nil, err
	}
	started := false
	for k, s := range rec.Steps {
		si := WorkflowStepInfo{Label: s.Label, Error: s.Error}
		if tpl, ok := readTemplate(s.Template); ok && !s.Gather {
			si.Name, si.JobID = tpl.Name, s.JobID
		}
		for _, p := range s.After {
			if p >= 0 && p < len(rec.Steps) {
				si.After = append(si.After, rec.Steps[p].Label)
			}
		}
		switch s.State {
		case queue.StepCompleted:
			si.Status, started = StatusCompleted, true
		case queue.StepFailed:
			si.Status, started = StatusFailed, true
		case queue.StepCanceled:
			si.Status = StatusCanceled
		case queue.StepCreated:
			si.Status, si.Error = createdStepStatus(s.JobID, jobs[k])
			started = started || si.Status != StatusPending && si.Status != StatusScheduled
		default:
			si.Status = StatusPending
		}
		info.Steps[k] = si
	}
	if info.Status == queue.WorkflowRunning && !started {
		info.Status = "pending"
	}
	if rec.Status == queue.WorkflowCompleted {
		info.Result = rec.Steps[rec.Final].Result
	}
	if rec.Why >= 0 {
		info.FailedStep = rec.Steps[rec.Why].Label
	}
	return info, nil
}

// createdJobs looks up the jobs of rec's created steps, by step, in one
// pipelined round trip.
func (c *Client) createdJobs(ctx context.Context, rec *queue.WorkflowRecord) (map[int]*queue.JobState, error) {
	var steps []int
	var ids []string
	for k, s := range rec.Steps {
		if s.State == queue.StepCreated {
			steps, ids = append(steps, k), append(ids, s.JobID)
		}
	}
	states, err := c.q.LookupMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int]*queue.JobState, len(steps))
	for i, k := range steps {
		out[k] = states[i]
	}
	return out, nil
}

// createdStepStatus is the status of a created step's job (st; nil: not
// found), and its error once it failed or was canceled: its job may have
// ended without the workflow hearing of it yet.
func createdStepStatus(job string, st *queue.JobState) (Status, string) {
	how, value, ended := workflows.JobEnd(job, st)
	switch {
	case !ended:
		return st.Status, ""
	case how == queue.EndCompleted:
		return StatusCompleted, ""
	case how == queue.EndCanceled:
		return StatusCanceled, string(value)
	}
	return StatusFailed, string(value)
}

func readTemplate(b []byte) (stepTemplate, bool) {
	var tpl stepTemplate
	err := json.Unmarshal(b, &tpl)
	return tpl, err == nil && tpl.Name != ""
}

// CancelWorkflow cancels workflow id: its steps not yet run are canceled at
// once, and its running steps' jobs are asked to stop. It returns the
// workflow's status after the call (canceled; completed for a workflow
// that had completed).
func (c *Client) CancelWorkflow(ctx context.Context, id string) (string, error) {
	r := c.workflowRunner()
	st, err := r.Cancel(ctx, id)
	if err == nil {
		// The steps whose waiting jobs the cancel ended show so at once.
		err = r.ReadEnds(ctx, id)
	}
	if errors.Is(err, queue.ErrWorkflowNotFound) {
		return "", fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
	}
	return st, err
}

// RetryWorkflow runs the failed and canceled steps of workflow id again:
// a dead step's job is replayed from the dead-letter set, a step whose job
// waits or runs again already (replayed by another call) keeps it, and any
// other step runs under a new job id; completed steps keep their results
// and do not run again. It returns how many steps run again (0: nothing had
// failed or been canceled).
func (c *Client) RetryWorkflow(ctx context.Context, id string) (int, error) {
	r := c.workflowRunner()
	// A step whose job ended unheard of (its worker died, or it was
	// canceled where no worker runs) is read back first: a retry runs it
	// again too.
	if err := r.ReadEnds(ctx, id); errors.Is(err, queue.ErrWorkflowNotFound) {
		return 0, fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
	} else if err != nil {
		return 0, err
	}
	n, err := r.Retry(ctx, id, c.rerunStepAs)
	if err == nil && n > 0 {
		// A step that kept a job which completed meanwhile completes now.
		err = r.ReadEnds(ctx, id)
	}
	if errors.Is(err, queue.ErrWorkflowNotFound) {
		return 0, fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
	}
	return n, err
}

// rerunStepAs is the job id a retried step runs under, given its job old
// (the Runner's rerunAs). A step never gets a second job while its job may
// run: a dead job is replayed and kept; a job found waiting or running
// (replayed by another call: an `app dlq replay --all`, a concurrent
// retry, a replay whose reply was lost and whose resend found it replayed)
// or completed is kept, and the step is made again under it, which stores
// nothing. Only a job that can run no more (canceled, gone) is left for a
// fresh id. A replay that fails while the job is still dead (the server
// unreachable, a job that cannot be replayed as stored) fails the retry:
// a fresh id would leave the dead job for a later replay to run the step
// again.
//
// The replay and the read are two calls: a job found running by the first
// can die before the second. Such a job is replayed again, not left dead
// beside a fresh id; only a job read dead twice whose replay found no
// dead-letter entry both times (purged) is left for a fresh id.
func (c *Client) rerunStepAs(ctx context.Context, old string) (string, error) {
	for try := 1; ; try++ {
		replayErr := c.q.Replay(ctx, old)
		if replayErr == nil {
			return old, nil
		}
		states, err := c.q.LookupMany(ctx, []string{old})
		if err != nil {
			return "", err
		}
		st := states[0]
		how, _, ended := workflows.JobEnd(old, st)
		if !ended || how == queue.EndCompleted {
			return old, nil
		}
		if st == nil || st.Status != StatusFailed {
			break // canceled or gone: it runs no more
		}
		if !errors.Is(replayErr, queue.ErrNotFound) {
			return "", replayErr
		}
		if try == 2 {
			break // dead, and no dead-letter entry to replay it from
		}
	}
	if r, ok := queue.RouteOf(old); ok {
		return queue.NewID(r, c.q.Now()), nil
	}
	step := "r"
	if i := strings.LastIndexByte(old, '-'); i >= 0 {
		step = old[i+1:]
	}
	return ulid.MustNew(ulid.Timestamp(c.q.Now()), ulid.DefaultEntropy()).String() + "-" + step, nil
}

// workflowSink advances the workflow of every step whose job a worker
// ended: completed, dead-lettered or canceled. It hands the work to a
// goroutine, as a sink must; should the process die first, the workflow's
// keeper reads the end back from the job.
type workflowSink struct {
	c   *Client
	log func(msg string, args ...any)
}

func (s workflowSink) JobEnded(e bananastype.JobEnd) {
	if e.Workflow == "" {
		return
	}
	value := []byte(e.Error)
	switch e.Ending {
	case queue.EndCompleted:
		value = e.Result
	case queue.EndDead, queue.EndCanceled:
	default:
		return
	}
	if stepEndHook != nil {
		stepEndHook(e.Workflow, e.Step)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.c.workflowRunner().StepEnded(ctx, e.Workflow, e.Step, e.ID, e.Ending, value, e.Trail); err != nil {
			s.log("bananas: advance workflow (its keeper will)", "workflow", e.Workflow, "job", e.ID, "err", err)
		}
	}()
}

// stepEndHook, when set (by tests), is called with each step's end once
// its job's end is recorded and before the workflow is advanced: the
// instant a process killed there leaves to the keeper.
var stepEndHook func(workflow string, step int)

// workflowKeeper is the worker's loop over the workflows left
// half-advanced: it looks every lease (at least every second), while the
// worker keeps a route.
func (w *Worker) workflowKeeper() *workflows.Keeper {
	r := w.c.workflowRunner()
	every := w.opts.Lease
	if every < time.Second {
		every = time.Second
	}
	tick := every / 4
	if tick < 100*time.Millisecond {
		tick = 100 * time.Millisecond
	}
	k := &workflows.Keeper{R: r, Tick: tick, Every: every, Logger: w.opts.Logger,
		Outage: scheduler.NewOutageLog(w.opts.Logger, "workflow keeper (steps a dead worker left unmade or unheard of)")}
	if w.keeper != nil {
		k.Active = func() bool { return len(w.keeper.Held()) > 0 }
	}
	return k
}
