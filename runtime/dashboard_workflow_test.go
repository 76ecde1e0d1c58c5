package runtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// From a failed step's job page to its workflow: the page shows the
// workflow failed, the step's error, its successor canceled; Retry, clicked
// in the browser, runs the failed steps again and the workflow completes
// with its result; the lookup box opens it by id.
func TestDashboard_AFailedWorkflowShowsItsErrorAndRetriesByClicking(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	r := newWFRuns()
	r.setFail("explode", true)
	wfWorker(t, c, r)
	last := runtime.Then(runtime.Then(wfDouble.With(c).Step(5), wfExplode.With(c)), wfDouble.With(c))
	id, err := last.Enqueue(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var info *bananastype.Workflow
	waitFor(t, 20*time.Second, "the workflow to fail", func() bool {
		info, err = c.Workflow(ctxT(t), id)
		return err == nil && info.Status == "failed"
	})
	boom := info.Steps[1].JobID
	url := serveAPI(t, runtime.NewInspector(c, registerWF), runtime.APIOptions{}).url

	run(t, ctx, "open the failed step's job", chromedp.Navigate(url+"/jobs/"+boom), chromedp.WaitVisible(chromedp.CSS("#workflow-link")))
	if got := text(t, ctx, "#workflow-link"); got != id {
		t.Fatalf("the job's workflow link reads %q; want %s", got, id)
	}
	shoot(t, ctx, "job-of-a-step")
	run(t, ctx, "follow the link to its workflow", chromedp.Click(chromedp.CSS("#workflow-link")), chromedp.WaitVisible(chromedp.CSS("#steps")))
	if got := text(t, ctx, "#status"); got != "failed" {
		t.Fatalf("the workflow's status = %q", got)
	}
	if got := text(t, ctx, "#error"); !strings.Contains(got, "explode broke") {
		t.Fatalf("the failed step's error = %q", got)
	}
	if got := innerText(t, ctx, "#step-wf_explode"); !strings.Contains(got, "failed") || !strings.Contains(got, boom) || !strings.Contains(got, "explode broke") {
		t.Fatalf("the failed step's row = %q", got)
	}
	if got := innerText(t, ctx, "#step-wf_double-2"); !strings.Contains(got, "canceled") {
		t.Fatalf("the successor's row = %q", got)
	}
	shoot(t, ctx, "workflow-failed")
	r.setFail("explode", false)
	run(t, ctx, "click Retry", chromedp.Click(chromedp.CSS("#retry")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "the failed and canceled steps run again") {
		t.Fatalf("the flash after Retry = %q", got)
	}
	waitFor(t, 20*time.Second, "the retried workflow to complete", func() bool {
		info, err = c.Workflow(ctxT(t), id)
		return err == nil && info.Status == "completed"
	})
	run(t, ctx, "reload the workflow", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#result")))
	if st, res := text(t, ctx, "#status"), text(t, ctx, "#result"); st != "completed" || res != "20" {
		t.Fatalf("after the retry: status %q, result %q; want completed, 20", st, res)
	}
	shoot(t, ctx, "workflow-completed")
	run(t, ctx, "look the workflow up by its id", chromedp.Navigate(url+"/workflows"), chromedp.WaitVisible(chromedp.CSS("#workflow-id")),
		chromedp.SendKeys(chromedp.CSS("#workflow-id"), id), chromedp.Click(chromedp.CSS("#open-workflow")), chromedp.WaitVisible(chromedp.CSS("#steps")))
	if got := text(t, ctx, "h1 code"); got != id {
		t.Fatalf("the lookup opened %q; want %s", got, id)
	}
}

// The Workflows page lists every workflow newest first, each linked to its
// page; the status filter keeps the failed one, naming its failed step; a
// page of one has a next page; a bad limit keeps the form with its error.
func TestDashboard_WorkflowsPageListsFiltersAndPages(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	ok1, boom, ok2 := threeWorkflows(t, c)
	url := serveAPI(t, runtime.NewInspector(c, registerWF), runtime.APIOptions{}).url

	run(t, ctx, "open the list", chromedp.Navigate(url+"/workflows"), chromedp.WaitVisible(chromedp.CSS("#workflows")))
	rows := innerText(t, ctx, "#workflows tbody")
	if i, j, k := strings.Index(rows, ok2), strings.Index(rows, boom), strings.Index(rows, ok1); i < 0 || i > j || j > k {
		t.Fatalf("the rows read %q; want %s, %s, %s in that order", rows, ok2, boom, ok1)
	}
	if got := innerText(t, ctx, "#wf-"+boom); !strings.Contains(got, "failed") || !strings.Contains(got, "wf_double") || !strings.Contains(got, "wf_explode") {
		t.Fatalf("the failed workflow's row = %q", got)
	}
	shoot(t, ctx, "workflows")

	run(t, ctx, "filter the failed ones", chromedp.SetValue(chromedp.CSS("#status-filter"), "failed"),
		chromedp.Click(chromedp.CSS("#filter")), chromedp.WaitNotPresent(chromedp.CSS("#wf-"+ok2)), chromedp.WaitVisible(chromedp.CSS("#wf-"+boom)))
	if got := innerText(t, ctx, "#workflows tbody"); strings.Contains(got, ok1) || strings.Contains(got, ok2) {
		t.Fatalf("the failed ones read %q; want %s alone", got, boom)
	}
	shoot(t, ctx, "workflows-failed")
	run(t, ctx, "open the failed one", chromedp.Click(chromedp.CSS("#wf-"+boom+" a")), chromedp.WaitVisible(chromedp.CSS("#steps")))
	if got := text(t, ctx, "h1 code"); got != boom {
		t.Fatalf("the link opened %q; want %s", got, boom)
	}

	run(t, ctx, "a page of one", chromedp.Navigate(url+"/workflows?limit=1"), chromedp.WaitVisible(chromedp.CSS("#next")))
	if got := innerText(t, ctx, "#workflows tbody"); !strings.Contains(got, ok2) {
		t.Fatalf("the first page of one reads %q; want %s", got, ok2)
	}
	run(t, ctx, "the next page", chromedp.Click(chromedp.CSS("#next")), chromedp.WaitVisible(chromedp.CSS("#wf-"+boom)))
	if got := innerText(t, ctx, "#workflows tbody"); strings.Contains(got, ok2) {
		t.Fatalf("the second page of one reads %q; want %s alone", got, boom)
	}
	shoot(t, ctx, "workflows-next-page")

	run(t, ctx, "a bad limit", chromedp.Navigate(url+"/workflows?limit=0"), chromedp.WaitVisible(chromedp.CSS("#bad")))
	if got := text(t, ctx, "#bad"); !strings.Contains(got, "limit") {
		t.Fatalf("a bad limit says %q", got)
	}
}
