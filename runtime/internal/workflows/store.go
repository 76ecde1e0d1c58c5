package workflows

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Store is the Redis side of workflows: package queue's workflow scripts
// and reads (queue/workflow.go, queue/workflow_list.go), and the lookup of
// steps' jobs. *queue.Queue is the one a program uses; the machine calls
// nothing else of Redis, so its tests can run it against a fake.
//
// Every call is harmless when made twice: a reply can be lost after the
// script ran, and the Runner and the keeper make it again.
type Store interface {
	// Now is the time as Redis knows it (queue.Queue.Now).
	Now() time.Time
	SubmitWorkflow(ctx context.Context, id string, steps []queue.WorkflowStep, final int, grace time.Duration, now time.Time) (ready []queue.ReadyStep, own bool, err error)
	AdvanceWorkflow(ctx context.Context, id string, step int, job string, how queue.Ending, value []byte, trail string, keep queue.WorkflowTTLs) (queue.WorkflowAdvance, error)
	StepsCreated(ctx context.Context, id string, steps []queue.ReadyStep) ([]string, error)
	CancelWorkflow(ctx context.Context, id string, keep time.Duration, now time.Time) (status string, jobs []string, err error)
	RetryWorkflow(ctx context.Context, id string, ids map[int]string, now time.Time) (queue.WorkflowAdvance, error)
	CreatingSteps(ctx context.Context, id string) (queue.WorkflowAdvance, error)
	ReadWorkflow(ctx context.Context, id string) (*queue.WorkflowRecord, error)
	DueWorkflows(ctx context.Context, now, next time.Time, n int) ([]string, error)
	SettleWorkflow(ctx context.Context, id string) error
	WatchWorkflow(ctx context.Context, id string, at time.Time) error
	PruneWorkflowList(ctx context.Context, before time.Time, offset, n int) (kept int, end bool, err error)
	// Replay moves dead job id back to its ready list (queue.ErrNotFound:
	// it is not dead).
	Replay(ctx context.Context, id string) error
	// LookupMany reads the jobs of ids, in order; nil for one not found.
	LookupMany(ctx context.Context, ids []string) ([]*queue.JobState, error)
}

var _ Store = (*queue.Queue)(nil)
