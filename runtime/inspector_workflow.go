package runtime

import (
	"context"
	"encoding/json"
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
	if info.Status == queue.WorkflowCompleted && info.Final >= 0 && info.Final < len(info.Steps) {
		w.Result = in.resultJSON(info.Steps[info.Final].Name, info.Result)
	}
	return w, nil
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
	return in.Workflow(ctx, id)
}

// RetryWorkflow runs the failed and canceled steps of workflow id again and
// returns it after the call, with how many steps run again.
func (in *Inspector) RetryWorkflow(ctx context.Context, id string) (*admin.Workflow, int, error) {
	if err := queue.CheckWorkflowID(id); err != nil {
		return nil, 0, fmt.Errorf("%w: %s", ErrWorkflowNotFound, err)
	}
	n, err := in.c.RetryWorkflow(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	w, err := in.Workflow(ctx, id)
	return w, n, err
}
