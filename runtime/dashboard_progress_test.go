package runtime_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A running job's page shows its progress and follows it without a reload:
// each value the handler reports replaces the last in place, and once the
// job ended the page shows its new status with no progress, and stops
// polling.
func TestDashboard_RunningJobsPageFollowsItsProgress(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	next, done := make(chan struct{}), make(chan struct{})
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		if err := runtime.Progress(ctx, 25, "fetching <img>"); err != nil {
			return testtasks.Reply{}, err
		}
		<-next
		if err := runtime.Progress(ctx, 75, "resizing"); err != nil {
			return testtasks.Reply{}, err
		}
		<-done
		return testtasks.Reply{Text: m.Text}, nil
	})
	startWorker(t, w)
	id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "photo"})
	if err != nil {
		t.Fatal(err)
	}
	waitProgress(t, c, id, 25, "")
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	run(t, ctx, "open the running job's page", chromedp.Navigate(url+"/jobs/"+id), chromedp.WaitVisible(chromedp.CSS("#progress-text")))
	if got := text(t, ctx, "#progress-text"); got != "25% fetching <img>" {
		t.Fatalf("progress = %q; want the handler's 25%% and its note, as text", got)
	}
	if got := text(t, ctx, "#status"); got != "processing" {
		t.Fatalf("status = %q; want processing", got)
	}
	// A mark on the page that a reload would wipe.
	run(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))
	shoot(t, ctx, "job-progress")
	close(next)
	waitJS(t, ctx, "the page to show the new progress in place",
		`document.querySelector('#progress-text')?.textContent.trim() === '75% resizing' && document.querySelector('#progress progress').value === 75 && window.notReloaded === true`)
	close(done)
	waitJS(t, ctx, "the page to show the job completed, without progress, in place",
		`document.querySelector('#status').textContent.trim() === 'completed' && !document.querySelector('#progress') && window.notReloaded === true`)
	if live, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-live]') !== null`)); err != nil || live {
		t.Fatalf("the ended job's page still marked live (%v, %v); want its polling over", live, err)
	}
}
