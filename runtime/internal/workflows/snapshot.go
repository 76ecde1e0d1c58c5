package workflows

import (
	"context"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// Snapshot is how a workflow stands for a reader: its record, and how
// each of its steps stands.
type Snapshot struct {
	Record *record.Workflow
	Steps  []StepStatus
	// Pending: the workflow runs and none of its steps has started (the
	// record says running).
	Pending bool
}

// StepStatus is how one step stands: its job's status — pending also
// while it waits for its predecessors —, and its error once it failed or
// was canceled.
type StepStatus struct {
	Status queue.Status
	Error  string
}

// Snapshot reads workflow id (record.ErrNotFound when it has no
// record) and the jobs of its created steps, in one pipelined round trip:
// a created step's job may have ended without the workflow hearing of it
// yet, and shows its end.
func (r *Runner) Snapshot(ctx context.Context, id string) (*Snapshot, error) {
	rec, err := r.Store.Read(ctx, id)
	if err != nil {
		return nil, err
	}
	var created []int
	var ids []string
	for k, s := range rec.Steps {
		if s.State == record.StepCreated {
			created, ids = append(created, k), append(ids, s.JobID)
		}
	}
	states, err := r.Store.LookupMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	jobs := make(map[int]*queue.JobState, len(created))
	for i, k := range created {
		jobs[k] = states[i]
	}
	out := &Snapshot{Record: rec, Steps: make([]StepStatus, len(rec.Steps))}
	started := false
	for k, s := range rec.Steps {
		st := StepStatus{Status: queue.StatusPending, Error: s.Error}
		switch s.State {
		case record.StepCompleted:
			st.Status, started = queue.StatusCompleted, true
		case record.StepFailed:
			st.Status, started = queue.StatusFailed, true
		case record.StepCanceled:
			st.Status = queue.StatusCanceled
		case record.StepArmed:
			// A timer waits for its due time, as a scheduled job does; a
			// signal wait for its signal.
			if s.Kind == record.KindTimer {
				st.Status = queue.StatusScheduled
			}
			started = started || len(s.After) > 0
		case record.StepCreated:
			st.Status, st.Error = createdStatus(s.JobID, jobs[k])
			started = started || st.Status != queue.StatusPending && st.Status != queue.StatusScheduled
		}
		out.Steps[k] = st
	}
	out.Pending = rec.Status == record.Running && !started
	return out, nil
}

// createdStatus is the status of a created step's job (st; nil: not
// found), and its error once it failed or was canceled.
func createdStatus(job string, st *queue.JobState) (queue.Status, string) {
	how, value, ended := JobEnd(job, st)
	switch {
	case !ended:
		return st.Status, ""
	case how == queue.EndCompleted:
		return queue.StatusCompleted, ""
	case how == queue.EndCanceled:
		return queue.StatusCanceled, string(value)
	}
	return queue.StatusFailed, string(value)
}
