package admin

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// ErrWorkflowNotFound: no workflow of that id (never submitted, or its
// record expired).
var ErrWorkflowNotFound = errors.New("bananas: workflow not found")

// Workflow is a snapshot of one workflow: what `workflow ID`, GET
// /api/v1/workflows/{id} and the dashboard's workflow page show, and, its
// Steps and Result left out, a row of `workflows`, GET /api/v1/workflows and
// the dashboard's list of workflows.
type Workflow struct {
	ID string
	// Status is pending (no step has started), running, completed, failed
	// or canceled.
	Status             string
	CreatedAt, EndedAt time.Time
	// Task is the final step's task (the workflow's result is its); "" when
	// the final step is a gather.
	Task string
	// FailedStep is the label of the step that failed or canceled the
	// workflow; "" when none did.
	FailedStep string
	Steps      []WorkflowStep
	// Result is the JSON of the final step's result once the workflow
	// completed; nil until then.
	Result json.RawMessage
}

// WorkflowStep is one step of a Workflow, predecessors before successors,
// the final step last.
type WorkflowStep struct {
	Label string // unique in its workflow
	Name  string // its task; "" for a gather (a step of the Go API that runs no job)
	JobID string // "" for a gather
	// Status is its job's: pending (also while it waits for its
	// predecessors), scheduled, processing, completed, failed or canceled.
	Status Status
	After  []string // the labels of its predecessors, in order
	Error  string   // a failed or canceled step's
}

// MarshalJSON writes the workflow as `workflow ID --json` and the API show it.
func (w Workflow) MarshalJSON() ([]byte, error) { return json.Marshal(w.wire()) }

// WireType is the value whose JSON shape the workflow writes.
func (Workflow) WireType() any { return workflowWire{} }

// workflowWire is a workflow's JSON: result null until it completed.
// A list's rows leave steps out.
type workflowWire struct {
	ID         string             `json:"id"`
	Status     string             `json:"status"`
	CreatedAt  bananastype.Time   `json:"created_at"`
	EndedAt    bananastype.Time   `json:"ended_at"`
	Task       string             `json:"task"`
	FailedStep string             `json:"failed_step"`
	Steps      []workflowStepWire `json:"steps,omitempty"`
	Result     json.RawMessage    `json:"result"`
}

// workflowStepWire is a step: "id" its label, name and job_id "" for a
// gather, after [] for a first step.
type workflowStepWire struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	JobID  string   `json:"job_id"`
	Status Status   `json:"status"`
	After  []string `json:"after"`
	Error  string   `json:"error,omitempty"`
}

func (w Workflow) wire() workflowWire {
	out := workflowWire{ID: w.ID, Status: w.Status, CreatedAt: bananastype.Time(w.CreatedAt), EndedAt: bananastype.Time(w.EndedAt), Result: w.Result,
		Task: w.Task, FailedStep: w.FailedStep,
		Steps: Map(w.Steps, func(s WorkflowStep) workflowStepWire {
			return workflowStepWire{ID: s.Label, Name: s.Name, JobID: s.JobID, Status: s.Status,
				After: Map(s.After, func(l string) string { return l }), Error: s.Error}
		})}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	return out
}

// UnmarshalJSON reads the workflow as MarshalJSON writes it.
func (w *Workflow) UnmarshalJSON(data []byte) error {
	var v workflowWire
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*w = Workflow{ID: v.ID, Status: v.Status, CreatedAt: time.Time(v.CreatedAt), EndedAt: time.Time(v.EndedAt), Task: v.Task, FailedStep: v.FailedStep,
		Steps: Map(v.Steps, func(s workflowStepWire) WorkflowStep {
			return WorkflowStep{Label: s.ID, Name: s.Name, JobID: s.JobID, Status: s.Status, After: s.After, Error: s.Error}
		})}
	if len(v.Result) > 0 && string(v.Result) != "null" {
		w.Result = v.Result
	}
	return nil
}

// WorkflowQuery selects a page of the list of workflows, newest first.
type WorkflowQuery struct {
	Status string // "" any; pending, running, completed, failed or canceled
	Task   string // "" any; else only workflows whose final step is of this task
	Cursor string // "" the first page; else a page's Next
	Limit  int    // 0: 50; at most 500
}

// WorkflowStatuses are the statuses a workflow can have, in the order of
// its life.
var WorkflowStatuses = []string{"pending", "running", "completed", "failed", "canceled"}

// WorkflowPage is one page of the list of workflows: its rows are
// Workflows without their steps and result.
type WorkflowPage struct {
	Workflows []Workflow
	Next      string // the cursor of the next page; "" at the end
}

// MarshalJSON writes the page as `workflows --json` and GET
// /api/v1/workflows show it.
func (p WorkflowPage) MarshalJSON() ([]byte, error) { return json.Marshal(p.wire()) }

// WireType is the value whose JSON shape the page writes.
func (WorkflowPage) WireType() any { return workflowPageWire{} }

type workflowPageWire struct {
	Workflows []workflowWire `json:"workflows"`
	Next      string         `json:"next"` // "" at the end
}

func (p WorkflowPage) wire() workflowPageWire {
	return workflowPageWire{Next: p.Next, Workflows: Map(p.Workflows, Workflow.wire)}
}

// UnmarshalJSON reads the page as MarshalJSON writes it.
func (p *WorkflowPage) UnmarshalJSON(data []byte) error {
	var v struct {
		Workflows []Workflow `json:"workflows"`
		Next      string     `json:"next"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*p = WorkflowPage{Workflows: v.Workflows, Next: v.Next}
	return nil
}

// WorkflowSubmission is a workflow to submit, as POST /api/v1/workflows
// takes it: its steps, each after the steps it names (listed before it),
// the final step — whose result is the workflow's — last.
type WorkflowSubmission struct {
	Steps []WorkflowStepSubmission
}

// WorkflowStepSubmission is one step of a WorkflowSubmission: a job of
// task Name. A first step has Args (JSON, read by the task's strict
// decoder); any other has After, and runs with its one predecessor's
// result, or with the list of its several predecessors' results, in the
// order After names them.
type WorkflowStepSubmission struct {
	ID    string // its label: 1 to 64 letters, digits, '_', '-', '.' or ':', unique in the workflow
	Name  string
	Args  json.RawMessage // nil: not given
	After []string
}

// MaxWorkflowLabel is the longest label of a step.
const MaxWorkflowLabel = 64

// MaxWorkflowSteps is the most steps a workflow has.
const MaxWorkflowSteps = record.MaxSteps
