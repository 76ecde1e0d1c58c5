package admin

import (
	"encoding/json"
	"errors"

	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// ErrWorkflowNotFound: no workflow of that id (never submitted, or its
// record expired).
var ErrWorkflowNotFound = errors.New("bananas: workflow not found")

// ErrNoSuchWait: the workflow waits for no signal of that name
// (runtime.WaitSignal).
var ErrNoSuchWait = errors.New("bananas: no wait of that name")

// WorkflowQuery selects a page of the list of workflows, newest first.
type WorkflowQuery struct {
	Status string // "" any; pending, running, completed, failed or canceled
	Task   string // "" any; else only workflows whose final step is of this task
	Cursor string // "" the first page; else a page's Next
	Limit  int    // 0: 50; at most 500
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
//
// A wait is a step without a task (no Name, no Args): Signal names the
// signal it waits for, Timeout (a Go duration, "" or "0s" for none) how
// long, counted from when its predecessors completed (at submission for
// one without); Sleep (a Go duration) makes it a timer after its one
// predecessor, passing that step's result on. A signal sent before its
// wait is reached is kept for it.
type WorkflowStepSubmission struct {
	ID      string // its label: 1 to 64 letters, digits, '_', '-', '.' or ':', unique in the workflow
	Name    string
	Args    json.RawMessage // nil: not given
	After   []string
	Signal  string // a signal wait's signal
	Timeout string // a signal wait's timeout
	Sleep   string // a timer's duration
}

// MaxWorkflowLabel is the longest label of a step.
const MaxWorkflowLabel = 64

// MaxWorkflowSteps is the most steps a workflow has.
const MaxWorkflowSteps = record.MaxSteps
