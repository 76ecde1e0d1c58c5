package bananastype

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Workflow is a snapshot of one workflow: what `workflow ID`, GET
// /api/v1/workflows/{id} and the dashboard's workflow page show, and, its
// Steps and Result left out, a row of `workflows`, GET /api/v1/workflows and
// the dashboard's list of workflows (WorkflowPage).
type Workflow struct {
	ID string
	// Status is one of WorkflowStatuses: pending (no step has started),
	// running, completed, failed or canceled.
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

// WorkflowStatuses are the statuses a workflow can have, in the order of
// its life.
var WorkflowStatuses = []string{WorkflowPending, WorkflowRunning, WorkflowCompleted, WorkflowFailed, WorkflowCanceled}

// A workflow's statuses: pending until a step has started, running until
// its final step completed (completed) or a step failed or was canceled
// (failed, canceled).
const (
	WorkflowPending   = "pending"
	WorkflowRunning   = "running"
	WorkflowCompleted = "completed"
	WorkflowFailed    = "failed"
	WorkflowCanceled  = "canceled"
)

// WorkflowStep is one step of a Workflow, predecessors before successors,
// the final step last.
type WorkflowStep struct {
	Label string // unique in its workflow
	Name  string // its task; "" for a gather (a step of the Go API that runs no job)
	JobID string // "" for a gather
	// Status is its job's: pending (also while it waits for its
	// predecessors), scheduled, processing, completed, failed or canceled.
	Status queue.Status
	After  []string // the labels of its predecessors, in order
	Error  string   // a failed or canceled step's
	// Wait is a timer's (runtime.Sleep) or a signal wait's
	// (runtime.WaitSignal); nil for a step of a task or a gather. Such a
	// step has no job: its Status is scheduled while a timer waits for
	// its due time, pending while a wait waits for its signal.
	Wait *WorkflowWait
}

// WorkflowWait is what a timer or a signal wait of a workflow waits for.
type WorkflowWait struct {
	Kind string // WaitTimer or WaitSignal
	// Signal is a signal wait's name.
	Signal string
	// Duration is a timer's; a signal wait's timeout (0: none).
	Duration time.Duration
	// Due is when the timer fires, or the wait times out, once it is
	// armed (its predecessors completed); zero before, and for a wait
	// without a timeout.
	Due time.Time
	// Received is when a signal wait's signal came; zero until then.
	Received time.Time
}

// The kinds of a WorkflowWait.
const (
	WaitTimer  = "timer"
	WaitSignal = "signal"
)

// workflowWaitWire is a wait's JSON: duration_ms its duration (a timer's)
// or timeout (a wait's, 0 none), times RFC 3339 or null.
type workflowWaitWire struct {
	Kind       string `json:"kind"`
	Signal     string `json:"signal,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Due        Time   `json:"due"`
	Received   Time   `json:"received"`
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
	CreatedAt  Time               `json:"created_at"`
	EndedAt    Time               `json:"ended_at"`
	Task       string             `json:"task"`
	FailedStep string             `json:"failed_step"`
	Steps      []workflowStepWire `json:"steps,omitempty"`
	Result     json.RawMessage    `json:"result"`
}

// workflowStepWire is a step: "id" its label, name and job_id "" for a
// gather, after [] for a first step.
type workflowStepWire struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	JobID  string            `json:"job_id"`
	Status queue.Status      `json:"status"`
	After  []string          `json:"after"`
	Error  string            `json:"error,omitempty"`
	Wait   *workflowWaitWire `json:"wait,omitempty"`
}

func (w Workflow) wire() workflowWire {
	out := workflowWire{ID: w.ID, Status: w.Status, CreatedAt: Time(w.CreatedAt), EndedAt: Time(w.EndedAt), Result: w.Result,
		Task: w.Task, FailedStep: w.FailedStep,
		Steps: mapOf(w.Steps, func(s WorkflowStep) workflowStepWire {
			out := workflowStepWire{ID: s.Label, Name: s.Name, JobID: s.JobID, Status: s.Status,
				After: mapOf(s.After, func(l string) string { return l }), Error: s.Error}
			if w := s.Wait; w != nil {
				out.Wait = &workflowWaitWire{Kind: w.Kind, Signal: w.Signal, DurationMS: w.Duration.Milliseconds(), Due: Time(w.Due), Received: Time(w.Received)}
			}
			return out
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
		Steps: mapOf(v.Steps, func(s workflowStepWire) WorkflowStep {
			out := WorkflowStep{Label: s.ID, Name: s.Name, JobID: s.JobID, Status: s.Status, After: s.After, Error: s.Error}
			if w := s.Wait; w != nil {
				out.Wait = &WorkflowWait{Kind: w.Kind, Signal: w.Signal, Duration: time.Duration(w.DurationMS) * time.Millisecond, Due: time.Time(w.Due), Received: time.Time(w.Received)}
			}
			return out
		})}
	if len(v.Result) > 0 && string(v.Result) != "null" {
		w.Result = v.Result
	}
	return nil
}

// WorkflowPage is one page of the list of workflows, newest first: its
// rows are Workflows without their steps and result.
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
	return workflowPageWire{Next: p.Next, Workflows: mapOf(p.Workflows, Workflow.wire)}
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
