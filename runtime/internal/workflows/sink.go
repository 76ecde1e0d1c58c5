package workflows

import (
	"context"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// Sink is the engine's sink of the ends of steps' jobs: it advances the
// workflow of every step whose job a worker ended — completed,
// dead-lettered or canceled; a job retried or handed back has not ended.
// It hands the advance to a goroutine, as a sink must not block; should
// the process die first, the keeper reads the end back from the job.
type Sink struct {
	R *Runner
	// Ended, when set, is called with each step's end once its job's end
	// is recorded and before the workflow is advanced: the instant a
	// process killed there leaves to the keeper (tests).
	Ended func(workflow string, step int)
	// Log is told of an advance that failed (the keeper will do it).
	Log func(msg string, args ...any)
	// Timeout bounds one advance; zero: 30 s.
	Timeout time.Duration
	// Done, when set, counts the advances under way (tests wait on it).
	Done *sync.WaitGroup
}

// JobEnded advances e's workflow, if e is a step's job's end.
func (s Sink) JobEnded(e bananastype.JobEnd) {
	if e.Workflow == "" {
		return
	}
	how, value, ok := stepEnd(e)
	if !ok {
		return
	}
	if s.Ended != nil {
		s.Ended(e.Workflow, e.Step)
	}
	if s.Done != nil {
		s.Done.Add(1)
	}
	go func() {
		if s.Done != nil {
			defer s.Done.Done()
		}
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := s.R.StepEnded(ctx, e.Workflow, e.Step, e.ID, how, value, e.Trail); err != nil && s.Log != nil {
			s.Log("bananas: advance workflow (its keeper will)", "workflow", e.Workflow, "job", e.ID, "err", err)
		}
	}()
}

// stepEnd is how e ended for its step: with its result (completed) or
// its error; ok false for an ending that is no step's end.
func stepEnd(e bananastype.JobEnd) (how queue.Ending, value []byte, ok bool) {
	switch e.Ending {
	case queue.EndCompleted:
		return e.Ending, e.Result, true
	case queue.EndDead, queue.EndCanceled:
		return e.Ending, []byte(e.Error), true
	}
	return 0, nil, false
}
