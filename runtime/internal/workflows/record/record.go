// Package record is the vocabulary of a workflow's record, shared by the
// machine (package workflows), its stores (redisstore, which holds the
// record in Redis, and storetest, in memory) and the runtime and admin
// code that submit and show workflows: the steps a submission gives, the
// states and statuses the record holds, what an advance answers, and the
// checks of ids and trails.
//
// It owns no behaviour: the record's transitions are redisstore's scripts,
// the order of the calls around them the workflows package's.
package record

import (
	"errors"
	"fmt"
	"github.com/bananas-go/bananas/bananastype"
	"strings"
	"time"
)

// StepState is where a workflow step is, as its record holds it.
type StepState byte

const (
	StepWaiting   StepState = 'w' // for its predecessors
	StepCreating  StepState = 'c' // its predecessors completed; its job is being made
	StepCreated   StepState = 'r' // its job exists: pending, scheduled or running
	StepCompleted StepState = 'd'
	StepFailed    StepState = 'f'
	StepCanceled  StepState = 'x'
	// StepArmed: a timer or a signal wait whose predecessors completed,
	// waiting for its due time or its signal. It holds no job.
	StepArmed StepState = 'a'
)

// StepKind tells a step without a job of its own apart: a gather, a timer
// (runtime.Sleep) or a signal wait (runtime.WaitSignal). A step of a task
// has none.
type StepKind byte

const (
	KindTask   StepKind = 0
	KindTimer  StepKind = 't'
	KindSignal StepKind = 'g'
)

// Workflow statuses, as the record holds them: the words of
// bananastype.WorkflowStatuses, which the surfaces show.
const (
	Running   = bananastype.WorkflowRunning
	Completed = bananastype.WorkflowCompleted
	Failed    = bananastype.WorkflowFailed
	Canceled  = bananastype.WorkflowCanceled
)

// NewStep is one step of a workflow to submit.
type NewStep struct {
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
	// Kind is KindTimer or KindSignal for a wait (no job, no template);
	// Wait its duration (a timer's d; a signal wait's timeout, 0 none),
	// Signal a signal wait's name and Type the Go type its payload
	// decodes as ("" for one not checked).
	Kind   StepKind
	Wait   time.Duration
	Signal string
	Type   string
}

// ReadyStep is a step whose predecessors completed, whose job the caller
// makes with JobID, Template and Args (its predecessors' results), then
// reports with the store's StepsCreated.
type ReadyStep struct {
	Index    int
	JobID    string
	Template []byte
	Args     []byte
	// After are the trails its predecessors' completed runs left (the
	// store's Advance), comma-separated, at most MaxAfterTrails; a Gather's
	// stand for theirs. "" when none left one.
	After string
}

// MaxAfterTrails bounds ReadyStep.After: a step after a Gather of a
// thousand steps is given the trails of the first few (looked for among
// its first 64 predecessors).
const MaxAfterTrails = 8

// Advance is what an advance, a retry and the keeper learn of a workflow:
// its status, the step that failed or canceled it (-1 when none did), and
// the steps to make now: Ready, which this call marked creating (an
// advance: no other caller was given them), and Again, which it found
// creating (another caller may be making them, or may have made some).
type Advance struct {
	Status string
	Why    int
	Ready  []ReadyStep
	Again  []ReadyStep
	// Due is the earliest due time of the waits the call armed (zero:
	// none): the keeper should look at the workflow then.
	Due time.Time
}

// Signal refusals (Store.Signal).
var (
	// ErrNoSuchWait: the workflow has no wait of that signal's name.
	ErrNoSuchWait = errors.New("no wait of that name")
	// ErrWorkflowEnded: the workflow completed, failed or was canceled.
	ErrWorkflowEnded = errors.New("workflow has ended")
	// ErrSignalsReceived: every wait of that name has its signal already.
	ErrSignalsReceived = errors.New("every wait of that name has received its signal")
	// ErrSignalType: the payload is of another Go type than the wait's.
	ErrSignalType = errors.New("payload of another type than the wait's")
)

// Signaled is what a signal did: Duplicate (a signal of that id was taken
// before: nothing more), Kept (no wait of its name armed yet: it completes
// the next one reached), or else it completed a wait and Advance says what
// followed.
type Signaled struct {
	Duplicate, Kept bool
	Advance
}

// TTLs are how long an ended workflow's record is kept.
type TTLs struct {
	Completed, Failed time.Duration
}

// Workflow is a snapshot of a workflow's record.
type Workflow struct {
	ID                 string
	Status             string
	Final              int
	Why                int // the step that failed or canceled it; -1 when none did
	CreatedAt, EndedAt time.Time
	Steps              []Step
	TTL                time.Duration // how long the record is kept; 0 while it runs
}

// Step is one step of a Workflow.
type Step struct {
	Label, JobID string
	Template     []byte
	After        []int
	State        StepState
	Gather       bool
	Result       []byte // a completed step's (msgpack)
	Error        string // a failed or canceled step's
	Args         []byte // a step without predecessors
	// A wait's (Kind not KindTask): its duration or timeout, signal name
	// and payload type as submitted; Due its due time once armed (zero:
	// none), Received when its signal came (zero: none yet).
	Kind          StepKind
	Wait          time.Duration
	Signal, Type  string
	Due, Received time.Time
}

// Summary is what a list of workflows shows of one, read from its
// record's own fields without its steps.
type Summary struct {
	ID     string
	Status string // running, completed, failed or canceled, as the record holds it
	// Steps is its step count; Left how many of them have not completed.
	Steps, Left        int
	CreatedAt, EndedAt time.Time
	// Template is the final step's (opaque here), "" for a gather;
	// FailedStep the label of the step that failed or canceled it, "" when
	// none did.
	Template   []byte
	FailedStep string
}

// ErrNotFound: no workflow of that id (never submitted, or its record
// expired).
var ErrNotFound = errors.New("workflow not found")

// ErrBadCursor: a cursor that no page of the list of workflows gave.
var ErrBadCursor = errors.New("bad cursor")

// MaxSteps bounds a workflow: its record is one hash, and each submission
// one script call.
const MaxSteps = 10000

// CheckID refuses an id that cannot name a workflow record: the id is the
// record's hash tag, so it holds no braces.
func CheckID(id string) error {
	if id == "" || len(id) > 200 || strings.ContainsAny(id, "{} \t\r\n") {
		return fmt.Errorf("invalid workflow id %q: 1-200 characters without spaces or braces", id)
	}
	return nil
}

// MaxTrail bounds a run's trail (the store's Advance): a W3C traceparent
// is 55 bytes.
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
