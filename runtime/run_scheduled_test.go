package runtime_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// POST /api/v1/routes/{route}/run-scheduled makes every scheduled job of
// the route, or those of one task, pending now and says how many; a
// pending job stays as it is, a second call finds nothing left, and a
// route nothing knows is a 404 naming it.
func TestAPI_RunScheduledMakesTheRoutesScheduledJobsPendingNow(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		ctx := ctxT(t)
		enqueue := func(task *runtime.Task[testtasks.Msg, testtasks.Reply], opts ...runtime.Option) string {
			id, err := task.With(c).Enqueue(ctx, testtasks.Msg{Text: "x"}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		echoes := []string{enqueue(testtasks.Echo, runtime.Delay(time.Hour)), enqueue(testtasks.Echo, runtime.Delay(2*time.Hour))}
		other := enqueue(testtasks.Other, runtime.Delay(time.Hour))
		ready := enqueue(testtasks.Echo)

		if got := a.want(http.StatusOK, "POST", "/api/v1/routes/default/run-scheduled?task=t_echo", ""); got["run"] != 2.0 || got["route"] != "default" {
			t.Fatalf("run-scheduled of t_echo = %v; want 2 run on route default", got)
		}
		for _, id := range append(echoes, ready) {
			if st := jobStatus(t, c, id); st != runtime.StatusPending {
				t.Fatalf("job %s after run-scheduled is %s; want pending", id, st)
			}
		}
		if st := jobStatus(t, c, other); st != runtime.StatusScheduled {
			t.Fatalf("the other task's job is %s; want it still scheduled", st)
		}
		if got := a.want(http.StatusOK, "POST", "/api/v1/routes/default/run-scheduled", ""); got["run"] != 1.0 {
			t.Fatalf("run-scheduled of every task = %v; want the other task's one", got)
		}
		if got := a.want(http.StatusOK, "POST", "/api/v1/routes/default/run-scheduled", ""); got["run"] != 0.0 {
			t.Fatalf("run-scheduled a second time = %v; want none left", got)
		}
		msg, _ := a.want(http.StatusNotFound, "POST", "/api/v1/routes/biling/run-scheduled", "")["error"].(string)
		if !strings.Contains(msg, "biling") || !strings.Contains(msg, "default") {
			t.Fatalf("run-scheduled on an unknown route: %q; want the route named and the known ones listed", msg)
		}
	})
}

// `run-scheduled ROUTE` does the same from the command line.
func TestCLI_RunScheduledRunsTheScheduledJobsOfARouteNow(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	id := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "a"}`, "--delay", "1h"))
	if out := a.ok("run-scheduled", "default", "--task", "count_words"); out != "1 scheduled job(s) of route default pending now\n" {
		t.Fatalf("run-scheduled printed %q", out)
	}
	if out := a.ok("job", id, "--json"); !strings.Contains(out, `"status": "pending"`) {
		t.Fatalf("after run-scheduled the job is not pending:\n%s", out)
	}
	if out := a.ok("run-scheduled", "default", "--json"); !strings.Contains(out, `"run": 0`) {
		t.Fatalf("run-scheduled --json with none left printed %q", out)
	}
	if code, _, errOut := a.run("run-scheduled"); code != runtime.ExitUsage || !strings.Contains(errOut, "want one route") {
		t.Fatalf("run-scheduled without a route exited %d: %s", code, errOut)
	}
}

// The overview's route row offers Run scheduled now; a click makes the
// route's scheduled job pending, and the worker runs it at once.
func TestDashboard_RunARoutesScheduledJobsNowByClicking(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c, runs, url := noteWorker(t)
	id := delayed(t, c)

	button := "#run-scheduled-default"
	run(t, ctx, "open the overview", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS(button)))
	run(t, ctx, "click Run scheduled now", chromedp.Click(chromedp.CSS(button)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Pending now: 1 scheduled jobs") {
		t.Fatalf("the flash after Run scheduled now = %q", got)
	}
	shoot(t, ctx, "route-run-scheduled")
	waitFor(t, 20*time.Second, "the job run now to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	if n := runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times; want once", n)
	}
}
