package runtime_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// phone sets the tab to a phone's screen: 390 px wide, touch, as a
// phone's browser lays pages out.
func phone() chromedp.Action[chromedp.Void] {
	return chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2))
}

// failForGood starts a worker on c whose t_note jobs fail at once, for
// good, with their text as the error, and returns the ids of the jobs of
// msgs once each is in the dead-letter queue.
func failForGood(t *testing.T, c *runtime.Client, msgs ...string) (*runtime.Worker, []string) {
	t.Helper()
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, testtasks.Note, func(_ context.Context, m testtasks.Msg) (runtime.None, error) {
		return runtime.None{}, fmt.Errorf("%s: %w", m.Text, runtime.SkipRetry)
	})
	startWorker(t, w)
	var ids []string
	for _, msg := range msgs {
		id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: msg})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		waitFor(t, 20*time.Second, "the jobs to fail for good", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
	}
	return w, ids
}

// offScreen lists, for each job card of the page, the parts of it (its
// status badge, its error) that are not drawn whole inside the screen's
// width; "" when every one is.
const offScreen = `(() => {
	const out = [];
	const inside = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= innerWidth; };
	for (const row of document.querySelectorAll('table.jobs tbody tr')) {
		const id = row.querySelector('td.id a').textContent.trim();
		const status = row.querySelector('.status'), err = row.querySelector('td.err');
		if (!inside(status)) out.push(id + ': status ' + JSON.stringify(status.getBoundingClientRect()));
		if (err.textContent.trim() !== '' && !inside(err)) out.push(id + ': error ' + JSON.stringify(err.getBoundingClientRect()));
	}
	return out.join('; ');
})()`

// On a phone (390 px wide) the job list is a card per job: the page does
// not scroll sideways, and each job's status and error are on screen. On a
// desktop the list stays a table with its header row.
func TestDashboard_JobListIsCardsOnAPhone(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w, ids := failForGood(t, c,
		"upstream refused the connection: dial tcp 10.0.0.7:5432: connect: connection refused after 3 attempts",
		"quota exceeded for project billing-reports-eu-west-1; the limit resets at midnight UTC",
	)
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	for _, list := range []string{"/jobs?state=failed", "/jobs?state=failed&route=default"} {
		run(t, ctx, "open "+list+" on a phone", phone(), chromedp.Navigate(url+list), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
		width, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.scrollingElement.scrollWidth, innerWidth]`))
		if err != nil {
			t.Fatal(err)
		}
		if width[1] != 390 || width[0] > width[1] {
			t.Fatalf("%s on a phone: the page is %d px wide in a %d px screen; want no sideways scroll in 390", list, width[0], width[1])
		}
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](offScreen))
		if err != nil {
			t.Fatal(err)
		}
		if out != "" {
			t.Fatalf("%s on a phone: parts of jobs are off the screen: %s", list, out)
		}
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('table.jobs tbody tr').length`)); n != len(ids) {
			t.Fatalf("%s lists %d jobs; want %d", list, n, len(ids))
		}
	}
	shoot(t, ctx, "dead-letter-queue") // leaves the desktop size on
	head, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('table.jobs thead th')].filter(th => th.getBoundingClientRect().width > 0).map(th => th.textContent.trim()).join('|')`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(head, "Status|Attempts|Error") {
		t.Fatalf("on a desktop the list's header row reads %q; want the table's columns", head)
	}
}

// The scheduled list says when each job will run, and how far off that
// is, not when it was created.
func TestDashboard_ScheduledListShowsWhenEachJobRuns(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "later"}, runtime.Delay(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Job(ctxT(t), id)
	if err != nil || info.ScheduledAt.IsZero() {
		t.Fatalf("job %s: %+v, %v; want it scheduled", id, info, err)
	}
	url := serveAPI(t, in, runtime.APIOptions{}).url

	run(t, ctx, "open the scheduled list", chromedp.Navigate(url+"/jobs?state=scheduled"), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	head, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('table.jobs thead th')].map(th => th.textContent.trim()).join('|')`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(head, "|Runs at") {
		t.Fatalf("the scheduled list's columns are %q; want the last one to be Runs at", head)
	}
	cell := text(t, ctx, "table.jobs tbody tr td.t")
	runAt := info.ScheduledAt.UTC().Format("2006-01-02 15:04:05Z")
	if !strings.HasPrefix(cell, runAt) || !regexp.MustCompile(`in 4m5\ds|in 5m00s`).MatchString(cell) {
		t.Fatalf("the scheduled job's time reads %q; want its run-at %s and how far off it is (in about 5m)", cell, runAt)
	}
	shoot(t, ctx, "scheduled")
}

// A job that failed for good is "failed" wherever the dashboard names its
// status (the state filter, its badge, the overview's count, the actions),
// and "dead-letter queue" is only the name of the place it is kept.
func TestDashboard_AJobThatFailedForGoodIsFailedEverywhere(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w, ids := failForGood(t, c, "smtp relay down")
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url
	// "dead" as a word of its own: "dead-letter queue" names the place.
	deadWord := `/\bdead\b(?!-letter)/i`

	for _, page := range []struct{ path, css string }{
		{"/", "#route-default"},
		{"/jobs?state=failed&route=default", "table.jobs"},
		{"/jobs/" + ids[0], "#status"},
	} {
		run(t, ctx, "open "+page.path, chromedp.Navigate(url+page.path), chromedp.WaitVisible(chromedp.CSS(page.css)))
		words, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
			`[...document.body.innerText.matchAll(new RegExp(%[1]s.source + '.{0,30}', 'gi'))].map(m => m[0]).join(' | ') +
			 [...document.querySelectorAll('[title], [aria-label], option, button')].map(e => (e.title || '') + ' ' + (e.getAttribute('aria-label') || '') + ' ' + e.textContent).filter(s => %[1]s.test(s)).join(' | ')`, deadWord)))
		if err != nil {
			t.Fatal(err)
		}
		if words != "" {
			t.Fatalf("%s calls a job that failed for good dead: %q", page.path, words)
		}
	}
	run(t, ctx, "open the dead-letter queue from the nav", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS(`nav a[href="/jobs?state=failed"]`)),
		chromedp.Click(chromedp.CSS(`nav a[href="/jobs?state=failed"]`)), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	for css, want := range map[string]string{
		"h1":                                "Dead-letter queue",
		`nav a[aria-current=page]`:          "Dead-letter queue",
		`select[name=state] option:checked`: "failed",
		"table.jobs tbody .status":          "failed",
	} {
		if got := text(t, ctx, css); got != want {
			t.Errorf("the dead-letter queue's %s reads %q; want %q", css, got, want)
		}
	}
	run(t, ctx, "open the overview", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#route-default")))
	if got := text(t, ctx, "table.routes thead th:nth-child(7)"); got != "Failed" {
		t.Errorf("the overview's count of the dead-letter queue is headed %q; want Failed", got)
	}
}

// "Run now" on the cron page enqueues one job of the entry at once, which
// runs; the entry's schedule (next run, run count, last job) is left as it
// was.
func TestDashboard_RunACronEntryNowByClicking(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, testtasks.Tick, func(context.Context, runtime.None) (runtime.None, error) { return runtime.None{}, nil })
	// Once a year, at midnight of January 1st: no tick fires during the test.
	runtime.Schedule(w, testtasks.Tick, "0 0 1 1 *", "")
	startWorker(t, w)
	in := w.Inspector()
	before, err := in.Cron(ctxT(t))
	if err != nil || len(before) != 1 {
		t.Fatalf("cron entries = %v, %v; want t_tick", before, err)
	}
	url := serveAPI(t, in, runtime.APIOptions{}).url

	run(t, ctx, "open the cron page", chromedp.Navigate(url+"/cron"), chromedp.WaitVisible(chromedp.CSS("#run-t_tick")))
	shoot(t, ctx, "cron")
	run(t, ctx, "a phone's window", phone())
	if off := outsideWindow(t, ctx, "#run-t_tick"); off != "" {
		t.Errorf("on a phone the cron entry's Run now is off-screen: %s", off)
	}
	run(t, ctx, "a desktop window", chromedp.EmulateViewport(1280, 800))
	run(t, ctx, "click Run now", chromedp.WaitVisible(chromedp.CSS("#run-t_tick")),
		chromedp.Click(chromedp.CSS("#run-t_tick")), chromedp.WaitVisible(chromedp.CSS("#flash")), chromedp.WaitVisible(chromedp.CSS("#status")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`/jobs/([^?]+)`).FindStringSubmatch(loc)
	if m == nil {
		t.Fatalf("after Run now at %s; want the new job's page", loc)
	}
	id := m[1]
	waitFor(t, 20*time.Second, "the job run now to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	run(t, ctx, "reload the job", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#status")))
	if got := text(t, ctx, "#status"); got != "completed" {
		t.Fatalf("the job run now is %q; want completed", got)
	}
	info, err := c.Job(ctxT(t), id)
	if err != nil || info.Name != "t_tick" || info.Route != "default" {
		t.Fatalf("job %s = %+v, %v; want a t_tick job of the default route", id, info, err)
	}
	after, err := in.Cron(ctxT(t))
	if err != nil || len(after) != 1 {
		t.Fatalf("cron entries = %v, %v", after, err)
	}
	if a, b := after[0], before[0]; a.RunCount != b.RunCount || !a.NextRun.Equal(b.NextRun) || !a.LastRun.Equal(b.LastRun) || a.LastJob != b.LastJob {
		t.Fatalf("the schedule moved: before %+v, after %+v; want it left alone", b, a)
	}
	if _, err := in.RunCron(ctxT(t), "nightly_report"); err == nil || !strings.Contains(err.Error(), "nightly_report") || !strings.Contains(err.Error(), "t_tick") {
		t.Fatalf("RunCron of an unknown entry: %v; want an error naming it and the entries there are", err)
	}
}

// A job that failed for good, replayed with a click, and then completed
// keeps its earlier runs on its page's timeline, the error they ended with
// included, before the run that completed it.
func TestDashboard_AReplayedJobsTimelineKeepsItsEarlierRuns(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	var healed atomic.Bool
	runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
		if !healed.Load() {
			return runtime.None{}, fmt.Errorf("smtp: mailbox unavailable: %w", runtime.SkipRetry)
		}
		return runtime.None{}, nil
	})
	startWorker(t, w)
	id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "replayed"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the job to fail for good", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
	healed.Store(true)
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	run(t, ctx, "open the job and click Replay", chromedp.Navigate(url+"/jobs/"+id), chromedp.WaitVisible(chromedp.CSS("#replay")),
		chromedp.Click(chromedp.CSS("#replay")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	waitFor(t, 20*time.Second, "the replayed job to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	run(t, ctx, "reload the job", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	got := text(t, ctx, "#timeline")
	if !regexp.MustCompile(`^Created .+ Run 1 started .+ Run 1 failed .+smtp: mailbox unavailable.* Failed for good .+ Replayed .+ Run 2 started .+ Finished .+$`).MatchString(got) {
		t.Fatalf("timeline = %q; want created, run 1 and its error, its end, the replay, run 2, finished, in that order", got)
	}
	if got := text(t, ctx, "#status"); got != "completed" {
		t.Fatalf("status = %q; want completed", got)
	}
	shoot(t, ctx, "replayed-timeline")
}
