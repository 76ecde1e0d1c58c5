package workflows

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// A workflow none of whose steps started reads pending; once a step's job
// runs it reads running, each step showing its job's status, and a step
// whose job ended unheard of shows its end at once.
func TestSnapshot_ShowsHowEachStepStands(t *testing.T) {
	r, st, _ := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a", "b", "c:a,b"), 2); err != nil {
		t.Fatal(err)
	}
	st.Jobs["job-a"] = &queue.JobState{Status: queue.StatusPending}
	st.Jobs["job-b"] = &queue.JobState{Status: queue.StatusScheduled}
	snap, err := r.Snapshot(ctx, "wf")
	if err != nil || !snap.Pending {
		t.Fatalf("snapshot pending %v, %v; want pending while no step started", snap != nil && snap.Pending, err)
	}
	st.Jobs["job-a"] = &queue.JobState{Status: queue.StatusProcessing}
	st.Jobs["job-b"] = &queue.JobState{Status: queue.StatusFailed, Error: "boom"}
	snap, err = r.Snapshot(ctx, "wf")
	if err != nil {
		t.Fatal(err)
	}
	want := []StepStatus{{queue.StatusProcessing, ""}, {queue.StatusFailed, "boom"}, {queue.StatusPending, ""}}
	if snap.Pending || !slices.Equal(snap.Steps, want) {
		t.Fatalf("pending %v, steps %+v; want running, %+v", snap.Pending, snap.Steps, want)
	}
	complete(t, r, "wf", 0, "a")
	if err := r.StepEnded(ctx, "wf", 1, "job-b", queue.EndDead, []byte("boom"), ""); err != nil {
		t.Fatal(err)
	}
	snap, err = r.Snapshot(ctx, "wf")
	if err != nil {
		t.Fatal(err)
	}
	if got := []queue.Status{snap.Steps[0].Status, snap.Steps[1].Status, snap.Steps[2].Status}; !slices.Equal(got, []queue.Status{queue.StatusCompleted, queue.StatusFailed, queue.StatusCanceled}) {
		t.Fatalf("steps %v; want completed, failed, canceled", got)
	}
	if _, err := r.Snapshot(ctx, "nope"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("snapshot of no workflow = %v; want ErrWorkflowNotFound", err)
	}
}
