package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Workflow is a snapshot of workflow id as the operator surfaces show it:
// its final step's result as the JSON of the task's result type, decoded by
// the registered task's generated code.
func (in *Inspector) Workflow(ctx context.Context, id string) (*admin.Workflow, error) {
	if err := queue.CheckWorkflowID(id); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrWorkflowNotFound, err)
	}
	info, err := in.c.Workflow(ctx, id)
	if err != nil {
		return nil, err
	}
	w := &admin.Workflow{ID: info.ID, Status: info.Status, CreatedAt: info.CreatedAt, EndedAt: info.EndedAt,
		Steps: make([]admin.WorkflowStep, len(info.Steps))}
	for k, s := range info.Steps {
		w.Steps[k] = admin.WorkflowStep{Label: s.Label, Name: s.Name, JobID: s.JobID, Status: s.Status, After: s.After, Error: s.Error}
	}
	in.endedJobs(ctx, id, w)
	if info.Status == queue.WorkflowCompleted && info.Final >= 0 && info.Final < len(info.Steps) {
		w.Result = in.resultJSON(info.Steps[info.Final].Name, info.Result)
	}
	return w, nil
}

// endedJobs corrects the status of the steps whose job ended before their
// workflow heard of it (its record still says created): a job's bare
// lookup reads any result record as completed, where its record may say
// failed or canceled, which Client.Job reads.
func (in *Inspector) endedJobs(ctx context.Context, id string, w *admin.Workflow) {
	rec, err := in.c.q.ReadWorkflow(ctx, id)
	if err != nil || len(rec.Steps) != len(w.Steps) {
		return
	}
	for k, s := range rec.Steps {
		if s.State != queue.StepCreated || w.Steps[k].Status != queue.StatusCompleted {
			continue
		}
		if j, err := in.c.Job(ctx, s.JobID); err == nil {
			w.Steps[k].Status = j.Status
			if j.Status != queue.StatusCompleted {
				w.Steps[k].Error = j.Error
			}
		}
	}
}

// settleEnded advances workflow id with the end of each step whose job
// ended without the workflow hearing of it (its record still says
// created), read as Client.Job reads it: completed, failed or canceled.
func (in *Inspector) settleEnded(ctx context.Context, id string) error {
	rec, err := in.c.q.ReadWorkflow(ctx, id)
	if errors.Is(err, queue.ErrWorkflowNotFound) {
		return fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
	}
	if err != nil {
		return err
	}
	for k, s := range rec.Steps {
		if s.State != queue.StepCreated {
			continue
		}
		j, err := in.c.Job(ctx, s.JobID)
		if err != nil || !j.Status.Finished() {
			continue
		}
		how, value := queue.StepEndFailed, []byte(orDefault(j.Error, "failed"))
		switch j.Status {
		case StatusCompleted:
			how, value = queue.StepEndCompleted, j.Result
		case StatusCanceled:
			how, value = queue.StepEndCanceled, []byte(orDefault(j.Error, "canceled"))
		}
		if err := in.c.workflowRunner().StepEnded(ctx, id, k, s.JobID, how, value); err != nil {
			return err
		}
	}
	return nil
}

func orDefault(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// resultJSON is b, a result of task name (a gather's when name is ""), as
// JSON: through the registered task's generated code, else as the msgpack
// reads without its type; nil for none, a task without a result, or bytes
// that do not read.
func (in *Inspector) resultJSON(name string, b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if h := in.reg.handlers[name]; h != nil {
		if h.resultType == nil {
			return nil
		}
		out, err := h.resultJSON(b)
		if err != nil {
			return nil
		}
		return out
	}
	var v any
	if decode(b, &v) != nil {
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// CancelWorkflow cancels workflow id and returns it after the call.
func (in *Inspector) CancelWorkflow(ctx context.Context, id string) (*admin.Workflow, error) {
	if err := queue.CheckWorkflowID(id); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrWorkflowNotFound, err)
	}
	if _, err := in.c.CancelWorkflow(ctx, id); err != nil {
		return nil, err
	}
	// The jobs the cancel ended (those not started) are read back into the
	// record now, as the keeper would later: the answer shows them ended.
	if err := in.settleEnded(ctx, id); err != nil {
		return nil, err
	}
	return in.Workflow(ctx, id)
}

// RetryWorkflow runs the failed and canceled steps of workflow id again and
// returns it after the call, with how many steps run again.
func (in *Inspector) RetryWorkflow(ctx context.Context, id string) (*admin.Workflow, int, error) {
	if err := queue.CheckWorkflowID(id); err != nil {
		return nil, 0, fmt.Errorf("%w: %s", ErrWorkflowNotFound, err)
	}
	// A step whose job ended without the workflow hearing of it yet (its
	// worker died, or the job was canceled where no worker runs) is read
	// back first, as the keeper would: a retry runs it again too.
	if err := in.settleEnded(ctx, id); err != nil {
		return nil, 0, err
	}
	n, err := in.c.RetryWorkflow(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	w, err := in.Workflow(ctx, id)
	return w, n, err
}
