package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// Workflow is a snapshot of workflow id as the operator surfaces show it:
// its final step's result as the JSON of the task's result type, decoded by
// the registered task's generated code.
func (in *Inspector) Workflow(ctx context.Context, id string) (*bananastype.Workflow, error) {
	if err := record.CheckID(id); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrWorkflowNotFound, err)
	}
	return in.rt.Workflow(ctx, id)
}

// CancelWorkflow cancels workflow id and returns it after the call.
func (in *Inspector) CancelWorkflow(ctx context.Context, id string) (*bananastype.Workflow, error) {
	if err := record.CheckID(id); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrWorkflowNotFound, err)
	}
	if _, err := in.rt.CancelWorkflow(ctx, id); err != nil {
		return nil, err
	}
	return in.Workflow(ctx, id)
}

// RetryWorkflow runs the failed and canceled steps of workflow id again and
// returns it after the call, with how many steps run again.
func (in *Inspector) RetryWorkflow(ctx context.Context, id string) (*bananastype.Workflow, int, error) {
	if err := record.CheckID(id); err != nil {
		return nil, 0, fmt.Errorf("%w: %s", ErrWorkflowNotFound, err)
	}
	n, err := in.rt.RetryWorkflow(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	w, err := in.Workflow(ctx, id)
	return w, n, err
}

// SignalWorkflow sends the signal name to workflow id (see Admin).
func (in *Inspector) SignalWorkflow(ctx context.Context, id, name string, payload json.RawMessage) error {
	if err := record.CheckID(id); err != nil {
		return fmt.Errorf("%w: %s", ErrWorkflowNotFound, err)
	}
	return in.rt.SignalWorkflow(ctx, id, name, payload)
}

// Workflows lists a page of workflows, newest first, of wq.Status and
// wq.Task when they are set. Each row is read from its record's own
// fields; a running workflow none of whose steps completed is read whole,
// its steps' jobs looked up, to tell pending from running as its own page
// does.
func (in *Inspector) Workflows(ctx context.Context, wq WorkflowQuery) (bananastype.WorkflowPage, error) {
	if wq.Status != "" && !slices.Contains(bananastype.WorkflowStatuses, wq.Status) {
		return bananastype.WorkflowPage{}, badQuery("status", "status %q: use pending, running, completed, failed or canceled", wq.Status)
	}
	if wq.Limit == 0 {
		wq.Limit = 50
	}
	if wq.Limit < 1 || wq.Limit > 500 {
		return bananastype.WorkflowPage{}, badQuery("limit", "limit %d: want 1 to 500", wq.Limit)
	}
	keep := func(s *record.Summary) (bool, error) {
		if wq.Task != "" {
			if in.rt.WorkflowTask(s.Template) != wq.Task {
				return false, nil
			}
		}
		if s.Status == record.Running && s.Left == s.Steps {
			if wq.Status != "" && wq.Status != bananastype.WorkflowPending && wq.Status != record.Running {
				return false, nil
			}
			info, err := in.rt.Workflow(ctx, s.ID)
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
	rows, next, err := redisstore.New(in.q).List(ctx, wq.Cursor, wq.Limit, keep)
	if errors.Is(err, record.ErrBadCursor) {
		return bananastype.WorkflowPage{}, badQuery("cursor", "%v", err)
	}
	if err != nil {
		return bananastype.WorkflowPage{}, err
	}
	page := bananastype.WorkflowPage{Next: next, Workflows: make([]bananastype.Workflow, len(rows))}
	for i, s := range rows {
		w := bananastype.Workflow{ID: s.ID, Status: s.Status, CreatedAt: s.CreatedAt, EndedAt: s.EndedAt, FailedStep: s.FailedStep}
		w.Task = in.rt.WorkflowTask(s.Template)
		page.Workflows[i] = w
	}
	return page, nil
}

// SubmitWorkflow checks s and submits it whole (see Admin); a refusal names
// the step at fault ("steps[2].after").
func (in *Inspector) SubmitWorkflow(ctx context.Context, s WorkflowSubmission) (string, map[string]string, error) {
	return in.rt.SubmitWorkflow(ctx, s)
}
