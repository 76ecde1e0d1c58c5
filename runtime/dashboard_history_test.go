package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The history page filters by status with its form (the filter lives in
// the link), pages by its Next link newest end first, and opens a job Redis
// has let go: the job page says it was read from the task history and shows
// its error and args.
func TestDashboard_HistoryFiltersByStatusPagesAndOpensAJobGoneFromRedis(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	rows := historyRows(40, time.Now().UTC().Truncate(time.Second))
	c := connect(t, "mem://", runtime.WithHistory(storeWith(t, rows)))
	url := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{}).url
	var failed []string // newest end first, as the rows are
	for _, r := range rows {
		if r.Status == queue.StatusFailed {
			failed = append(failed, r.ID)
		}
	}

	run(t, ctx, "open the history from the header", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS(`nav a[href="/history"]`)),
		chromedp.Click(chromedp.CSS(`nav a[href="/history"]`)), chromedp.WaitVisible(chromedp.CSS("#history")))
	if got := historyTableIDs(t, ctx); len(got) != 40 || got[0] != "hist-000" || got[39] != "hist-039" {
		t.Fatalf("the history lists %v; want the 40 rows newest end first", got)
	}
	shoot(t, ctx, "history")

	run(t, ctx, "filter failed jobs, five a page", chromedp.Navigate(url+"/history?limit=5"), chromedp.WaitVisible(chromedp.CSS("#history")),
		chromedp.SetValue(chromedp.CSS(`select[name=status]`), "failed"), chromedp.Click(chromedp.CSS("#filter")),
		chromedp.WaitReady(chromedp.CSS(`select[name=status] option[selected]`)))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "status=failed") || !strings.Contains(loc, "limit=5") {
		t.Fatalf("the filter is at %q; want status=failed and limit=5 in the link", loc)
	}
	seen := followNextPages(t, ctx, failed)
	if strings.Join(seen, " ") != strings.Join(failed, " ") {
		t.Fatalf("the pages of failed jobs list %v; want %v", seen, failed)
	}

	link := fmt.Sprintf(`#history a[href="/jobs/%s"]`, failed[len(failed)-1])
	run(t, ctx, "open a failed job", chromedp.Click(chromedp.CSS(link)), chromedp.WaitVisible(chromedp.CSS("#from-history")))
	if got := text(t, ctx, "#status"); got != "failed" {
		t.Fatalf("status = %q; want failed", got)
	}
	if got := text(t, ctx, "#from-history"); !strings.Contains(got, "task history") {
		t.Fatalf("the note = %q; want it to say the job was read from the task history", got)
	}
	if got := text(t, ctx, "#error"); !strings.HasPrefix(got, "smtp: mailbox") {
		t.Fatalf("error = %q; want the row's error", got)
	}
	if got := text(t, ctx, "#args"); !strings.Contains(got, `"N":`) {
		t.Fatalf("args = %q; want the row's args", got)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#replay, #cancel, #delete').length`)); n != 0 {
		t.Fatalf("the page of a job gone from Redis offers %d actions", n)
	}
	shoot(t, ctx, "job-from-history")
}

// followNextPages reads the history table's pages of failed jobs, following
// Next until the last page, and returns the ids in the order shown. Each
// page must hold failed jobs only, five at most, and open on the next of
// want.
func followNextPages(t *testing.T, ctx context.Context, want []string) []string {
	t.Helper()
	var seen []string
	for page := 1; ; page++ {
		got := historyTableIDs(t, ctx)
		statuses, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#history tbody [data-col=status]')].map(td => td.textContent.trim())`))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range statuses {
			if s != "failed" {
				t.Fatalf("page %d of failed jobs shows a %s job: %v", page, s, got)
			}
		}
		if len(got) > 5 {
			t.Fatalf("page %d holds %d rows; want at most 5", page, len(got))
		}
		seen = append(seen, got...)
		more, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('#next')`))
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		if len(seen) >= len(want) {
			t.Fatalf("after %v, a Next link; want the last page", seen)
		}
		// The next page opens on the next failed job, newest end first.
		run(t, ctx, fmt.Sprintf("follow page %d's Next link to %s", page, want[len(seen)]), chromedp.Click(chromedp.CSS("#next")),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#history tbody tr:first-child a[href="/jobs/%s"]`, want[len(seen)]))))
		if page == 1 {
			shoot(t, ctx, "history-page-2")
		}
	}
	return seen
}

// historyTableIDs are the job ids of the history table on the page, in order.
func historyTableIDs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#history tbody td.id a')].map(a => a.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// On a phone (390 px) the history's filters fold under a "Filters" summary
// that says how many are set, the search and its button share a line, and
// the first result starts on the first screen; opening the summary shows
// the fields. On a desktop (1280 px) every field shows without a click.
// The page says which window it searched.
func TestDashboard_HistoryFiltersFoldOnAPhoneSoResultsShowOnTheFirstScreen(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	rows := historyRows(12, time.Now().UTC().Truncate(time.Second))
	c := connect(t, "mem://", runtime.WithHistory(storeWith(t, rows)))
	url := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{}).url
	visible := func(css string) bool {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.checkVisibility() && e.getBoundingClientRect().height > 0; })()`, css)))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	top := func(css string) float64 {
		t.Helper()
		y, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().top + window.scrollY`, css)))
		if err != nil {
			t.Fatal(err)
		}
		return y
	}

	run(t, ctx, "open the history on a phone", phone(), chromedp.Navigate(url+"/history?route=default"), chromedp.WaitVisible(chromedp.CSS("#history")))
	for _, f := range []string{`input[name=task]`, `select[name=status]`, `input[name=since]`} {
		if visible(f) {
			t.Errorf("on a phone %s shows before the filters are opened", f)
		}
	}
	if !visible(`input[name=q]`) || !visible("#filter") || top(`input[name=q]`) != top("#filter") {
		t.Errorf("on a phone the search (at %v) and its button (at %v) are not on one line", top(`input[name=q]`), top("#filter"))
	}
	if got := innerText(t, ctx, "#more-filters > summary"); got != "Filters (1 set)" {
		t.Errorf("the folded filters say %q; want Filters (1 set)", got)
	}
	if y := top("#history tbody tr"); y > 844-100 {
		t.Errorf("the first result starts at %v px; want it on the first screen (844 px high)", y)
	}
	if got := innerText(t, ctx, "#window"); !strings.Contains(got, "to now") || !strings.Contains(got, "the last 7 days by default") {
		t.Errorf("the window line says %q; want the window searched and the default", got)
	}
	shoot(t, ctx, "history-filters-folded") // leaves the desktop size on
	run(t, ctx, "back on a phone, open the filters", phone(), chromedp.Click(chromedp.CSS("#more-filters > summary")))
	if !visible(`select[name=status]`) || !visible(`input[name=route]`) {
		t.Fatal("the filters opened on a phone do not show their fields")
	}
	shoot(t, ctx, "history-filters-open")
	run(t, ctx, "filter failed jobs", phone(), chromedp.SetValue(chromedp.CSS(`select[name=status]`), "failed"), chromedp.Click(chromedp.CSS("#filter")),
		chromedp.WaitReady(chromedp.CSS(`select[name=status] option[selected]`)))
	if got := innerText(t, ctx, "#more-filters > summary"); got != "Filters (2 set)" {
		t.Errorf("after filtering the folded filters say %q; want Filters (2 set)", got)
	}

	run(t, ctx, "on a desktop", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(url+"/history"), chromedp.WaitVisible(chromedp.CSS("#history")))
	for _, f := range []string{`input[name=task]`, `select[name=status]`, `input[name=since]`, `input[name=q]`} {
		if !visible(f) {
			t.Errorf("on a desktop %s does not show", f)
		}
	}
	if visible("#more-filters > summary") {
		t.Error("on a desktop the filters' summary shows")
	}
	shoot(t, ctx, "history-filters-desktop")
}
