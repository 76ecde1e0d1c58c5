package workflows

import (
	"context"
	"github.com/bananas-go/bananas/bananastype"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// A step's job that completed advances its workflow with its result; one
// that died or was canceled fails or cancels it; a run that will run again
// (retried, handed back) and a job of no workflow change nothing.
func TestSink_AdvancesTheWorkflowOfEachStepsEnd(t *testing.T) {
	for _, c := range []struct {
		name   string
		ending queue.Ending
		status string
		b      record.StepState
	}{
		{"completed", queue.EndCompleted, record.Running, record.StepCreated},
		{"dead", queue.EndDead, record.Failed, record.StepCanceled},
		{"canceled", queue.EndCanceled, record.Canceled, record.StepCanceled},
		{"retrying", queue.EndRetrying, record.Running, record.StepWaiting},
		{"handed back", queue.EndHandedBack, record.Running, record.StepWaiting},
	} {
		r, st, m := newRunner(t)
		if err := r.Submit(context.Background(), "wf", graph("a", "b:a"), 1); err != nil {
			t.Fatal(err)
		}
		var done sync.WaitGroup
		var told []int
		s := Sink{R: r, Done: &done, Ended: func(wf string, step int) { told = append(told, step) }}
		s.JobEnded(bananastype.JobEnd{ID: "job-a", Ending: c.ending, Result: []byte("res-a"), Error: "boom"}) // no workflow
		s.JobEnded(bananastype.JobEnd{ID: "job-a", Workflow: "wf", Step: 0, Ending: c.ending, Result: []byte("res-a"), Error: "boom"})
		done.Wait()
		if st.Status("wf") != c.status || st.State("wf", "b") != c.b {
			t.Errorf("%s: workflow %s, b %c; want %s, b %c", c.name, st.Status("wf"), st.State("wf", "b"), c.status, c.b)
		}
		if c.b == record.StepCreated && m.argsOf("job-b") != "res-a" {
			t.Errorf("%s: b made with %q; want a's result", c.name, m.argsOf("job-b"))
		}
		if ended := c.status != record.Running || c.b == record.StepCreated; ended != slices.Equal(told, []int{0}) {
			t.Errorf("%s: Ended told of steps %v", c.name, told)
		}
	}
}

// A worker's keeper looks at each running workflow every lease, at least
// every second, and for due ones four times as often, at least every 250
// ms (a timer fires within a second of its due time).
func TestNewKeeper_LooksEveryLease(t *testing.T) {
	for _, c := range []struct{ lease, every, tick time.Duration }{
		{30 * time.Second, 30 * time.Second, 250 * time.Millisecond},
		{200 * time.Millisecond, time.Second, 250 * time.Millisecond},
	} {
		k := NewKeeper(&Runner{}, c.lease, nil, nil)
		if k.Every != c.every || k.Tick != c.tick {
			t.Errorf("lease %v: every %v, tick %v; want %v, %v", c.lease, k.Every, k.Tick, c.every, c.tick)
		}
	}
}
