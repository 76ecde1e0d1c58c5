package runtime_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// delayed enqueues a Note due in an hour.
func delayed(t *testing.T, c *runtime.Client) string {
	t.Helper()
	id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "later"}, runtime.Delay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if st := jobStatus(t, c, id); st != runtime.StatusScheduled {
		t.Fatalf("a job delayed an hour is %s; want scheduled", st)
	}
	return id
}

// noteWorker starts a worker that counts its runs of Note, and the
// dashboard over it; it returns the worker's client, the count and the
// dashboard's URL.
func noteWorker(t *testing.T) (*runtime.Client, *atomic.Int32, string) {
	t.Helper()
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runs := new(atomic.Int32)
	runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
		runs.Add(1)
		return runtime.None{}, nil
	})
	startWorker(t, w)
	return c, runs, serveAPI(t, w.Inspector(), runtime.APIOptions{}).url
}

// POST /api/v1/jobs/{id}/run and `job run ID` make a scheduled job pending
// at once, answer a second call as done, and refuse a job in another state
// (409, exit 1) or unknown (404, exit 1), against Redis.
func TestRunNow_TheAPIAndTheCLIRunAScheduledJobNow(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	api := serveAPI(t, runtime.NewInspector(c), runtime.APIOptions{})

	byAPI := delayed(t, c)
	for i := 0; i < 2; i++ {
		st, body := api.do("POST", "/api/v1/jobs/"+byAPI+"/run", "")
		if m, _ := body.(map[string]any); st != http.StatusOK || m["run"] != byAPI {
			t.Fatalf("POST run, call %d = %d %v; want 200 naming the job", i+1, st, body)
		}
		if s := jobStatus(t, c, byAPI); s != runtime.StatusPending {
			t.Fatalf("after POST run, call %d, the job is %s; want pending", i+1, s)
		}
	}
	canceled := delayed(t, c)
	if _, err := runtime.NewInspector(c).Cancel(ctxT(t), canceled); err != nil {
		t.Fatal(err)
	}
	if st, body := api.do("POST", "/api/v1/jobs/"+canceled+"/run", ""); st != http.StatusConflict || !strings.Contains(body.(map[string]any)["error"].(string), "it is canceled") {
		t.Fatalf("POST run of a canceled job = %d %v; want 409 naming its state", st, body)
	}
	if st, body := api.do("POST", "/api/v1/jobs/01M8C1Y3N4PJDH1Q4MECZKV2MA.default/run", ""); st != http.StatusNotFound {
		t.Fatalf("POST run of an unknown job = %d %v; want 404", st, body)
	}

	a := newApp(t) // a namespace of its own
	byCLI := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "a b c"}`, "--delay", "1h"))
	if out := a.ok("job", "run", byCLI); out != "pending now: "+byCLI+"\n" {
		t.Fatalf("job run printed %q", out)
	}
	if out := a.ok("job", byCLI, "--json"); !strings.Contains(out, `"status": "pending"`) {
		t.Fatalf("after job run the job is not pending:\n%s", out)
	}
	canceled = strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "a b c"}`, "--delay", "1h"))
	a.ok("job", "cancel", canceled)
	if code, _, errOut := a.run("job", "run", canceled); code != 1 || !strings.Contains(errOut, "cannot run job "+canceled+": it is canceled") {
		t.Fatalf("job run of a canceled job exited %d: %s", code, errOut)
	}
	if code, _, errOut := a.run("job", "run"); code != 2 || !strings.Contains(errOut, "want one job ID") {
		t.Fatalf("job run without an id exited %d: %s", code, errOut)
	}
}

// A scheduled job's page offers Run now; a click makes it pending, and the
// worker runs it at once instead of in an hour.
func TestDashboard_RunAScheduledJobNowByClicking(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c, runs, url := noteWorker(t)
	id := delayed(t, c)

	run(t, ctx, "open the scheduled job", chromedp.Navigate(url+"/jobs/"+id), chromedp.WaitVisible(chromedp.CSS("#run")))
	if got := text(t, ctx, "#status"); got != "scheduled" {
		t.Fatalf("status = %q; want scheduled", got)
	}
	shoot(t, ctx, "scheduled-job")
	run(t, ctx, "click Run now", chromedp.Click(chromedp.CSS("#run")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Pending now") {
		t.Fatalf("the flash after Run now = %q", got)
	}
	waitFor(t, 20*time.Second, "the job run now to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	if n := runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times; want once", n)
	}
}
