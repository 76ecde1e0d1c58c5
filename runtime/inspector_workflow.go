package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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
	w := &admin.Workflow{ID: info.ID, Status: info.Status, CreatedAt: info.CreatedAt, EndedAt: info.EndedAt, FailedStep: info.FailedStep,
		Steps: make([]admin.WorkflowStep, len(info.Steps))}
	if info.Final >= 0 && info.Final < len(info.Steps) {
		w.Task = info.Steps[info.Final].Name
	}
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

// Workflows lists a page of workflows, newest first, of wq.Status and
// wq.Task when they are set. Each row is read from its record's own
// fields; a running workflow none of whose steps completed is read whole,
// its steps' jobs looked up, to tell pending from running as its own page
// does.
func (in *Inspector) Workflows(ctx context.Context, wq admin.WorkflowQuery) (admin.WorkflowPage, error) {
	if wq.Status != "" && !slices.Contains(admin.WorkflowStatuses, wq.Status) {
		return admin.WorkflowPage{}, badQuery("status", "status %q: use pending, running, completed, failed or canceled", wq.Status)
	}
	if wq.Limit == 0 {
		wq.Limit = 50
	}
	if wq.Limit < 1 || wq.Limit > 500 {
		return admin.WorkflowPage{}, badQuery("limit", "limit %d: want 1 to 500", wq.Limit)
	}
	keep := func(s *queue.WorkflowSummary) (bool, error) {
		if wq.Task != "" {
			if tpl, _ := readTemplate(s.Template); tpl.Name != wq.Task {
				return false, nil
			}
		}
		if s.Status == queue.WorkflowRunning && s.Left == s.Steps {
			if wq.Status != "" && wq.Status != "pending" && wq.Status != queue.WorkflowRunning {
				return false, nil
			}
			info, err := in.c.Workflow(ctx, s.ID)
			if errors.Is(err, ErrWorkflowNotFound) {
				return false, nil // expired meanwhile
			}
			if err != nil {
				return false, err
			}
			s.Status = info.Status
		}
		return wq.Status == "" || s.Status == wq.Status, nil
	}
	rows, next, err := in.c.q.ListWorkflows(ctx, wq.Cursor, wq.Limit, keep)
	if errors.Is(err, queue.ErrBadWorkflowCursor) {
		return admin.WorkflowPage{}, badQuery("cursor", "%v", err)
	}
	if err != nil {
		return admin.WorkflowPage{}, err
	}
	page := admin.WorkflowPage{Next: next, Workflows: make([]admin.Workflow, len(rows))}
	for i, s := range rows {
		w := admin.Workflow{ID: s.ID, Status: s.Status, CreatedAt: s.CreatedAt, EndedAt: s.EndedAt, FailedStep: s.FailedStep}
		if tpl, ok := readTemplate(s.Template); ok {
			w.Task = tpl.Name
		}
		page.Workflows[i] = w
	}
	return page, nil
}
