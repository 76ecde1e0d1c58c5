package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// A workflow's page lists its waits and timers: a signal wait with its
// name, timeout and due time, received once its signal came; a timer with
// its duration and due time once armed.
func TestDashboard_AWorkflowsPageShowsItsWaitsAndTimers(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
	runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) { return x + 1, nil })
	runtime.Handle(w, wfStepB, func(_ context.Context, x int) (int, error) { return x, nil })
	runtime.Handle(w, wfStepC, func(_ context.Context, x int) (int, error) { return x, nil })
	startWorker(t, w)
	slept := runtime.Then(runtime.Sleep(wfStepA.With(c).Step(1), time.Hour), wfStepB.With(c))
	waited := runtime.Then(runtime.WaitSignal[int]("approval", 48*time.Hour), wfStepC.With(c))
	id, err := runtime.Gather(slept, waited).Enqueue(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the timer to be armed", func() bool {
		return stepOf(t, workflowOf(t, c, id), "sleep").Status == runtime.StatusScheduled
	})
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url
	run(t, ctx, "open the workflow", chromedp.Navigate(url+"/workflows/"+id), chromedp.WaitVisible(chromedp.CSS("#waits")))
	wait := innerText(t, ctx, "#wait-approval")
	due := stepOf(t, workflowOf(t, c, id), "approval").Wait.Due.UTC().Format("2006-01-02 15:04:05Z")
	if !strings.Contains(wait, "signal approval") || !strings.Contains(wait, "48h0m0s") || !strings.Contains(wait, due) || !strings.Contains(wait, "pending") {
		t.Fatalf("the wait's row = %q; want signal approval, 48h0m0s, due %s, pending", wait, due)
	}
	timer := innerText(t, ctx, "#wait-sleep")
	due = stepOf(t, workflowOf(t, c, id), "sleep").Wait.Due.UTC().Format("2006-01-02 15:04:05Z")
	if !strings.Contains(timer, "timer") || !strings.Contains(timer, "1h0m0s") || !strings.Contains(timer, due) || !strings.Contains(timer, "scheduled") {
		t.Fatalf("the timer's row = %q; want timer, 1h0m0s, due %s, scheduled", timer, due)
	}
	if got := innerText(t, ctx, "#step-approval"); !strings.Contains(got, "(signal)") {
		t.Fatalf("the wait's step row = %q", got)
	}
	shoot(t, ctx, "workflow-waits")
	if err := c.Signal(ctxT(t), id, "approval", 7); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#waits")))
	received := stepOf(t, workflowOf(t, c, id), "approval").Wait.Received.UTC().Format("2006-01-02 15:04:05Z")
	if got := innerText(t, ctx, "#wait-approval"); !strings.Contains(got, received) || !strings.Contains(got, "completed") {
		t.Fatalf("the wait's row after its signal = %q; want received %s, completed", got, received)
	}
}
