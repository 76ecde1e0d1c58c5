package workflows

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// Store is the Redis side of workflows: the record's scripts and reads,
// and the lookup of steps' jobs. redisstore.New(q) is the one a program
// uses; the machine calls nothing else of Redis, so its tests run it
// against storetest's, in memory.
//
// Every call is harmless when made twice: a reply can be lost after the
// script ran, and the Runner and the keeper make it again.
type Store interface {
	// Now is the time as Redis knows it (queue.Queue.Now).
	Now() time.Time
	Submit(ctx context.Context, id string, steps []record.NewStep, final int, grace time.Duration, now time.Time) (ready []record.ReadyStep, own bool, err error)
	Advance(ctx context.Context, id string, step int, job string, how queue.Ending, value []byte, trail string, keep record.TTLs) (record.Advance, error)
	StepsCreated(ctx context.Context, id string, steps []record.ReadyStep) ([]string, error)
	Cancel(ctx context.Context, id string, keep time.Duration, now time.Time) (status string, jobs []string, err error)
	Retry(ctx context.Context, id string, ids map[int]string, now time.Time) (record.Advance, error)
	CreatingSteps(ctx context.Context, id string) (record.Advance, error)
	Read(ctx context.Context, id string) (*record.Workflow, error)
	Due(ctx context.Context, now, next time.Time, n int) ([]string, error)
	Settle(ctx context.Context, id string) error
	Watch(ctx context.Context, id string, at time.Time) error
	PruneList(ctx context.Context, before time.Time, offset, n int) (kept int, end bool, err error)
	// Replay moves dead job id back to its ready list (queue.ErrNotFound:
	// it is not dead).
	Replay(ctx context.Context, id string) error
	// LookupMany reads the jobs of ids, in order; nil for one not found.
	LookupMany(ctx context.Context, ids []string) ([]*queue.JobState, error)
	// Fire fires the waits whose due time has come: timers complete,
	// signal waits time out.
	Fire(ctx context.Context, id string, keep record.TTLs) (record.Advance, error)
	// Signal gives workflow id a signal (redisstore.Store.Signal), and has
	// the keeper look at it by watch (zero: no change) in the same round
	// trip.
	Signal(ctx context.Context, id, name, sig string, payload []byte, gotype string, keep record.TTLs, watch time.Time) (record.Signaled, error)
	// Park has the keeper look at workflow id next at at, later than the
	// period it was put back at: a workflow that only waits.
	Park(ctx context.Context, id string, at time.Time) error
}
