package runtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The page of a job that expired before it started shows the status
// expired and says so in its timeline, with its args; in Chromium.
func TestDashboard_AnExpiredJobsPageSaysExpired(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	testtasks.Register(w)
	id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "too late"}, runtime.ExpireAt(time.Now().Add(-time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	waitFor(t, 20*time.Second, "the job to expire", func() bool { return jobStatus(t, c, id) == runtime.StatusExpired })
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url
	run(t, ctx, "open the job", chromedp.Navigate(url+"/jobs/"+id), chromedp.WaitVisible(chromedp.CSS("#status")))
	if got := text(t, ctx, "#status"); got != "expired" {
		t.Fatalf("status = %q; want expired", got)
	}
	if got := text(t, ctx, "#timeline"); !strings.Contains(got, "Expired: not started before its expiry") || strings.Contains(got, "Run ") {
		t.Fatalf("timeline = %q; want it to say the job expired, and no run", got)
	}
	if got := text(t, ctx, "#args"); !strings.Contains(got, "too late") {
		t.Fatalf("args = %q; want the job's args", got)
	}
	shoot(t, ctx, "expired-job")
}
