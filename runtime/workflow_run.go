package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

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
	if rec.Status != record.Completed {
		return zero, c.workflowError(ctx, rec)
	}
	var out R
	if b := rec.Steps[rec.Final].Result; len(b) > 0 {
		if b, err = c.openWorkflowValue(id, b); err != nil {
			return zero, fmt.Errorf("bananas: result of workflow %s: %w", id, err)
		}
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
func (c *Client) awaitWorkflow(ctx context.Context, id string) (*record.Workflow, error) {
	sub, err := c.listener.Subscribe(ctx, queue.WorkflowChannel(c.q.Namespace(), id))
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	st := redisstore.New(c.q)
	for {
		reconnected := c.listener.Reconnected()
		rec, err := st.ReadEnd(ctx, id)
		if errors.Is(err, record.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
		}
		if err != nil {
			return nil, err
		}
		if rec.Status != record.Running {
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
func (c *Client) workflowError(ctx context.Context, rec *record.Workflow) error {
	e := &WorkflowError{Workflow: rec.ID}
	k := rec.Why
	if k < 0 {
		k = rec.Final
	}
	s := rec.Steps[k]
	e.Step, e.JobID = s.Label, s.JobID
	msg := c.openError(s.JobID, s.Error)
	if msg == "" {
		msg = rec.Status
	}
	name := ""
	if tpl, ok := readTemplate(s.Template); ok {
		name = tpl.Name
	}
	je := &JobError{ID: s.JobID, Name: name, Message: msg, Canceled: s.State == record.StepCanceled || rec.Status == record.Canceled}
	if s.JobID != "" && !s.Gather {
		if info, err := c.Job(ctx, s.JobID); err == nil {
			je.Attempts = info.Attempts
		}
	}
	e.Err = je
	if s.Kind == record.KindSignal && s.State == record.StepFailed {
		// A wait fails only by its timeout.
		e.Err = fmt.Errorf("wait %s: %s: %w", s.Label, msg, ErrTimeout)
	}
	return e
}

// Workflow returns a snapshot of workflow id, or an error matching
// ErrWorkflowNotFound: what `workflow ID`, the API and the dashboard show,
// its result the JSON of the final step's result type when the program
// declares that task (its generated code is linked), else as the stored
// msgpack reads.
func (c *Client) Workflow(ctx context.Context, id string) (*bananastype.Workflow, error) {
	snap, err := c.workflowRunner().Snapshot(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	rec := snap.Record
	w := &bananastype.Workflow{ID: id, Status: rec.Status, CreatedAt: rec.CreatedAt, EndedAt: rec.EndedAt, Steps: make([]bananastype.WorkflowStep, len(rec.Steps))}
	for k, s := range rec.Steps {
		ws := bananastype.WorkflowStep{Label: s.Label, Status: snap.Steps[k].Status, Error: c.openError(s.JobID, snap.Steps[k].Error)}
		if s.Kind != record.KindTask {
			ws.Wait = &bananastype.WorkflowWait{Kind: bananastype.WaitTimer, Duration: s.Wait, Due: s.Due}
			if s.Kind == record.KindSignal {
				ws.Wait.Kind, ws.Wait.Signal, ws.Wait.Received = bananastype.WaitSignal, s.Signal, s.Received
			}
		}
		if tpl, ok := readTemplate(s.Template); ok && !s.Gather {
			ws.Name, ws.JobID = tpl.Name, s.JobID
		}
		for _, p := range s.After {
			if p >= 0 && p < len(rec.Steps) {
				ws.After = append(ws.After, rec.Steps[p].Label)
			}
		}
		w.Steps[k] = ws
	}
	if snap.Pending {
		w.Status = bananastype.WorkflowPending
	}
	if rec.Final >= 0 && rec.Final < len(rec.Steps) {
		w.Task = w.Steps[rec.Final].Name
		if rec.Status == record.Completed {
			if b, err := c.openWorkflowValue(id, rec.Steps[rec.Final].Result); err == nil {
				w.Result = declaredResultJSON(w.Task, b)
			} else {
				w.Result = encryptedJSON
			}
		}
	}
	if rec.Why >= 0 && rec.Why < len(rec.Steps) {
		w.FailedStep = rec.Steps[rec.Why].Label
	}
	return w, nil
}

// readTemplate reads a step's template (workflows.ReadTemplate).
func readTemplate(b []byte) (workflows.Template, bool) { return workflows.ReadTemplate(b) }

// CancelWorkflow cancels workflow id: its steps not yet run are canceled at
// once, and its running steps' jobs are asked to stop. It returns the
// workflow's status after the call (canceled; completed for a workflow
// that had completed).
func (c *Client) CancelWorkflow(ctx context.Context, id string) (string, error) {
	st, err := c.workflowRunner().Cancel(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
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
	n, err := c.workflowRunner().Retry(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
		return 0, fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
	}
	return n, err
}

// workflowSink is the worker's sink of steps' ends (workflows.Sink).
type workflowSink struct {
	c   *Client
	log func(msg string, args ...any)
}

func (s workflowSink) JobEnded(e bananastype.JobEnd) {
	dropCheckpoint(s.c, e)
	if e.Workflow == "" {
		return // most ends: no workflow, and no look-up of the runner on the job's path
	}
	// The step's error goes to the workflow's record as its job keeps it:
	// sealed for the job when the client has keys (views open it).
	e.Error = s.c.storedError(e.ID, e.Error)
	workflows.Sink{R: s.c.workflowRunner(), Ended: stepEndHook, Log: s.log}.JobEnded(e)
}

// stepEndHook, when set (by tests), is workflows.Sink's Ended.
var stepEndHook func(workflow string, step int)
