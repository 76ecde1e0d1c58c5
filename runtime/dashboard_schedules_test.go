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

// The schedules page lists a schedule made at run time beside the code's
// cron entry; Pause, Resume and Run now act on it by clicking, and the
// code's entry offers Pause (then Resume) and Run now, but not Delete.
func TestDashboard_SchedulesPausedResumedAndRunByClicking(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	testtasks.Register(w)
	runtime.Schedule(w, testtasks.Tick, "0 0 1 1 *", "") // once a year: no tick during the test
	startWorker(t, w)
	// Once a year too, so the test only sees what its clicks do.
	if err := testtasks.Echo.With(c).Schedule(ctxT(t), "yearly-acme", testtasks.Msg{Text: "acme"}, runtime.Every("0 0 1 1 *")); err != nil {
		t.Fatal(err)
	}
	// A schedule of a task no worker registers is marked so.
	if err := runtime.NewTask[testtasks.Msg, runtime.None]("t_nobody").With(c).Schedule(ctxT(t), "yearly-nobody", testtasks.Msg{}, runtime.Every("0 0 1 1 *")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the worker's heartbeat", func() bool {
		s, err := c.Schedule(ctxT(t), "yearly-acme")
		return err == nil && s.Registered
	})
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	run(t, ctx, "open the schedules", chromedp.Navigate(url+"/schedules"), chromedp.WaitVisible(chromedp.CSS("#pause-yearly-acme")))
	shoot(t, ctx, "schedules")
	// On a 1280x800 screen, and on a phone's, every row's actions are on
	// screen: the table fits its box (on a phone, a card per schedule), no
	// scrolling sideways to reach a row's buttons.
	onScreen := func(when string, rows ...string) {
		t.Helper()
		for _, size := range []struct {
			name string
			vp   chromedp.Action[chromedp.Void]
		}{{"390x844", phone()}, {"1280x800", chromedp.EmulateViewport(1280, 800)}} {
			run(t, ctx, "set a "+size.name+" viewport", size.vp)
			for _, row := range rows {
				if off := outsideWindow(t, ctx, "#schedule-"+row+" td.actions button"); off != "" {
					t.Errorf("%s: row %s at %s: buttons off screen: %s", when, row, size.name, off)
				}
			}
		}
	}
	onScreen("before any run", "yearly-acme", "t_tick", "yearly-nobody")
	for css, want := range map[string]string{
		"#schedule-yearly-acme td:nth-child(2)": "data", "#schedule-yearly-acme td:nth-child(3)": "t_echo", "#schedule-yearly-acme td:nth-child(5)": "active",
		"#schedule-yearly-acme td.spec .tz": "UTC", "#schedule-yearly-acme td.spec .overlap": "skip",
		"#schedule-t_tick td:nth-child(2)": "code", "#schedule-t_tick td:nth-child(3)": "t_tick",
	} {
		if got := strings.TrimSpace(text(t, ctx, css)); got != want {
			t.Errorf("%s reads %q; want %q", css, got, want)
		}
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#schedule-yearly-nobody .unregistered, #schedule-yearly-acme .unregistered').length`)); err != nil || n != 1 {
		t.Fatalf("%d rows marked as no worker registering their task, %v; want yearly-nobody's alone", n, err)
	}
	if got := text(t, ctx, "#schedule-yearly-nobody .unregistered"); !strings.Contains(got, "no worker") {
		t.Fatalf("the marker reads %q", got)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#delete-t_tick').length`)); err != nil || n != 0 {
		t.Fatalf("the code's entry offers Delete (%d), %v", n, err)
	}
	run(t, ctx, "click Pause of the code's entry", chromedp.Click(chromedp.CSS("#pause-t_tick")), chromedp.WaitVisible(chromedp.CSS("#flash")), chromedp.WaitVisible(chromedp.CSS("#resume-t_tick")))
	if got := strings.TrimSpace(text(t, ctx, "#schedule-t_tick td:nth-child(5)")); got != "paused" {
		t.Fatalf("the code's entry reads %q after Pause; want paused", got)
	}
	run(t, ctx, "click Resume of the code's entry", chromedp.Click(chromedp.CSS("#resume-t_tick")), chromedp.WaitVisible(chromedp.CSS("#flash")), chromedp.WaitVisible(chromedp.CSS("#pause-t_tick")))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#run-t_tick').length`)); err != nil || n != 1 {
		t.Fatalf("the code's entry offers Run now %d times, %v", n, err)
	}
	run(t, ctx, "click Pause", chromedp.Click(chromedp.CSS("#pause-yearly-acme")), chromedp.WaitVisible(chromedp.CSS("#flash")), chromedp.WaitVisible(chromedp.CSS("#resume-yearly-acme")))
	if s, err := c.Schedule(ctxT(t), "yearly-acme"); err != nil || !s.Paused {
		t.Fatalf("after Pause: %+v, %v", s, err)
	}
	run(t, ctx, "click Resume", chromedp.Click(chromedp.CSS("#resume-yearly-acme")), chromedp.WaitVisible(chromedp.CSS("#flash")), chromedp.WaitVisible(chromedp.CSS("#pause-yearly-acme")))
	if s, err := c.Schedule(ctxT(t), "yearly-acme"); err != nil || s.Paused {
		t.Fatalf("after Resume: %+v, %v", s, err)
	}
	run(t, ctx, "click Run now", chromedp.Click(chromedp.CSS("#run-yearly-acme")), chromedp.WaitVisible(chromedp.CSS("#status")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "/jobs/") {
		t.Fatalf("after Run now at %q, %v; want the new job's page", loc, err)
	}
	id := loc[strings.LastIndex(loc, "/jobs/")+len("/jobs/"):]
	if i := strings.IndexByte(id, '?'); i >= 0 {
		id = id[:i]
	}
	waitFor(t, 20*time.Second, "the job run now to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	// With a last run and a last job in a row, it still fits.
	if err := testtasks.Echo.With(c).Schedule(ctxT(t), "secondly-acme-reports", testtasks.Msg{Text: "acme"}, runtime.Every("@every 1s")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "a tick of the secondly schedule", func() bool {
		s, err := c.Schedule(ctxT(t), "secondly-acme-reports")
		return err == nil && s.LastJob != ""
	})
	run(t, ctx, "open the schedules again", chromedp.Navigate(url+"/schedules"), chromedp.WaitVisible(chromedp.CSS("#schedule-secondly-acme-reports td.id a")))
	shoot(t, ctx, "schedules-ran")
	onScreen("after a tick", "yearly-acme", "t_tick", "yearly-nobody", "secondly-acme-reports")
}
