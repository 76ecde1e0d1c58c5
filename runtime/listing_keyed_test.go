package runtime_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// enqueueKeyedTo enqueues n jobs of count_words on route, each under one of
// keys in turn (a flow each: they wait in the keyed sets, not the ready
// lists), and returns their ids.
func enqueueKeyedTo(t *testing.T, c *runtime.Client, route string, keys []string, n int, opts ...runtime.Option) []string {
	t.Helper()
	var ids []string
	for i := range n {
		o := append([]runtime.Option{runtime.Route(route), runtime.Key(keys[i%len(keys)])}, opts...)
		id, err := tasks.CountWords.With(c).Enqueue(ctxT(t), tasks.Text{Body: fmt.Sprint("charge ", i)}, o...)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// 22 keyed jobs wait on a paused route: `jobs --route` lists them on its
// first page, with no cursor, and --json has them all.
func TestCLI_JobsOnAPausedRouteListsItsKeyedJobs(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := connect(t, redistest.Shared(t).URL(), runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	ids := enqueueKeyedTo(t, c, "charges", []string{"cus_1", "cus_2", "cus_3"}, 22)
	a.ok("pause", "charges")
	if out := a.ok("queues"); !strings.Contains(out, "PAUSED") {
		t.Fatalf("queues:\n%s", out)
	}
	for _, args := range [][]string{{"jobs", "--route", "charges"}, {"jobs", "--route", "charges", "--limit", "50"}} {
		out := a.ok(args...)
		if strings.Contains(out, "no pending jobs") || strings.Contains(out, "more: --cursor") {
			t.Fatalf("%v with 22 keyed jobs waiting:\n%s", args, out)
		}
		for _, id := range ids {
			if !strings.Contains(out, id) {
				t.Fatalf("%v does not list keyed job %s:\n%s", args, id, out)
			}
		}
	}
	var page struct {
		Jobs []struct{ ID string }
		Next string
	}
	if err := json.Unmarshal([]byte(a.ok("jobs", "--route", "charges", "--json")), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 22 || page.Next != "" {
		t.Fatalf("jobs --json: %d jobs, next %q; want 22 and no next", len(page.Jobs), page.Next)
	}
	// Pages of 10: 10, 10 and 2, the last without a cursor.
	var shown []string
	cursor := ""
	for _, want := range []int{10, 10, 2} {
		args := []string{"jobs", "--route", "charges", "--limit", "10", "--json"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		page.Jobs, page.Next = nil, ""
		if err := json.Unmarshal([]byte(a.ok(args...)), &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Jobs) != want {
			t.Fatalf("page of %d after %d shown; want %d", len(page.Jobs), len(shown), want)
		}
		for _, j := range page.Jobs {
			shown = append(shown, j.ID)
		}
		cursor = page.Next
	}
	if cursor != "" {
		t.Fatalf("every job shown and still a cursor %q", cursor)
	}
	slices.Sort(shown)
	slices.Sort(ids)
	if !slices.Equal(shown, ids) {
		t.Fatalf("pages of 10 showed %v; want each of %v once", shown, ids)
	}
	// A filter that matches none says so: no job on the route of that task.
	if out := a.ok("jobs", "--route", "charges", "--task", "send_email"); !strings.Contains(out, "no pending jobs on route charges, task send_email") {
		t.Fatalf("jobs --task send_email:\n%s", out)
	}
	// Past the entries a filtered page reads, an empty page says none of
	// them matched and gives the cursor, never "no jobs".
	rare := bulkThenRare(t, c)
	out := a.ok("jobs", "--route", "bulk", "--task", "send_email")
	if strings.Contains(out, "no pending jobs") || !strings.Contains(out, "none of the pending jobs this page read on route bulk, task send_email matched") ||
		!strings.Contains(out, "more: --cursor ") {
		t.Fatalf("jobs --task send_email behind 1,000 others:\n%s", out)
	}
	cursor = strings.TrimSpace(out[strings.Index(out, "more: --cursor ")+len("more: --cursor "):])
	if out := a.ok("jobs", "--route", "bulk", "--task", "send_email", "--cursor", cursor); !strings.Contains(out, rare) {
		t.Fatalf("the next page does not list the matching job %s:\n%s", rare, out)
	}
}

// bulkThenRare enqueues 1,000 jobs of count_words and then one of
// send_email on route bulk, and returns the last one's id: a page filtered
// by task send_email reads the 1,000 first and matches none.
func bulkThenRare(t *testing.T, c *runtime.Client) string {
	t.Helper()
	if _, err := tasks.CountWords.With(c).EnqueueMany(ctxT(t), make([]tasks.Text, 1000), runtime.Route("bulk"), runtime.WithPriority(runtime.PriorityHigh)); err != nil {
		t.Fatal(err)
	}
	id, err := tasks.SendEmail.With(c).Enqueue(ctxT(t), tasks.EmailArgs{To: "ana@example.com"}, runtime.Route("bulk"))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A sharded route's listing, in each state, fills its pages across the
// shards, their ready lists and keyed sets, and ends with the last job: a
// page of limit N holds min(N, left) jobs, and no cursor leads to an empty
// page.
func TestInspector_ShardedRouteListingsFillEachPage(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		in := runtime.NewInspector(c, tasks.Register)
		if err := in.SetShards(ctxT(t), "charges", 4); err != nil {
			t.Fatal(err)
		}
		keys := []string{"a", "b", "c", "d", "e", "f", "g"}
		pending := enqueueKeyedTo(t, c, "charges", keys, 9)
		pending = append(pending, enqueueKeyedTo(t, c, "charges", keys, 4, runtime.WithPriority(runtime.PriorityHigh))...)
		for range 3 {
			id, err := tasks.CountWords.With(c).Enqueue(ctxT(t), tasks.Text{Body: "plain"}, runtime.Route("charges"))
			if err != nil {
				t.Fatal(err)
			}
			pending = append(pending, id)
		}
		scheduled := enqueueKeyedTo(t, c, "charges", keys, 5, runtime.Delay(3600e9))
		// A route listed after charges that holds no job any more.
		gone, err := tasks.CountWords.With(c).Enqueue(ctxT(t), tasks.Text{Body: "gone"}, runtime.Route("zz-drained"))
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Delete(ctxT(t), gone); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			q   admin.JobQuery
			ids []string
		}{
			{admin.JobQuery{Route: "charges"}, pending},
			{admin.JobQuery{Route: "charges", Task: "count_words"}, pending},
			{admin.JobQuery{Route: "charges", State: runtime.StatusScheduled}, scheduled},
			{admin.JobQuery{}, pending},
			{admin.JobQuery{State: runtime.StatusScheduled}, scheduled},
		} {
			for _, newest := range []bool{false, true} {
				for _, limit := range []int{1, 3, 4, 5, 16, 17, 50} {
					q := tc.q
					q.Limit, q.Newest = limit, newest
					var shown []string
					for pages := 0; ; pages++ {
						if pages > len(tc.ids) {
							t.Fatalf("%+v: the listing never ends", q)
						}
						p, err := in.Jobs(ctxT(t), q)
						if err != nil {
							t.Fatal(err)
						}
						if want := min(limit, len(tc.ids)-len(shown)); len(p.Jobs) != want {
							t.Fatalf("%+v, page %d: %d jobs, want %d (%d of %d shown)", q, pages, len(p.Jobs), want, len(shown), len(tc.ids))
						}
						for _, j := range p.Jobs {
							shown = append(shown, j.ID)
						}
						if p.Next == "" {
							break
						}
						if len(shown) == len(tc.ids) {
							t.Fatalf("%+v: every job shown and still a next %q", q, p.Next)
						}
						q.Cursor = p.Next
					}
					got, want := slices.Clone(shown), slices.Clone(tc.ids)
					slices.Sort(got)
					slices.Sort(want)
					if !slices.Equal(got, want) {
						t.Fatalf("%+v: shown %d jobs, want each of %d once", tc.q, len(got), len(want))
					}
				}
			}
		}
	})
}

// The dashboard's page of a paused route lists the keyed jobs waiting on it.
func TestDashboard_RoutePageListsKeyedJobsOfAPausedRoute(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	ids := enqueueKeyedTo(t, c, "charges", []string{"cus_1", "cus_2"}, 22)
	in := runtime.NewInspector(c, tasks.Register, testtasks.Register)
	if err := in.Pause(ctxT(t), "charges"); err != nil {
		t.Fatal(err)
	}
	url := serveAPI(t, in, runtime.APIOptions{}).url
	run(t, ctx, "open the route's jobs", chromedp.Navigate(url+"/jobs?route=charges"), chromedp.WaitVisible(chromedp.CSS("table.jobs, p.empty")))
	listed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('table.jobs tbody td[data-col=id] a')].map(a => a.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(ids)
	if !slices.Equal(listed, ids) {
		t.Fatalf("the route's page lists %d jobs %v; want the 22 keyed jobs", len(listed), listed)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#next, p.empty').length`)); n != 0 {
		t.Fatalf("the route's page, every job listed, still has %d of a next link or an empty notice", n)
	}
	shoot(t, ctx, "keyed-jobs-of-a-paused-route")

	// A filtered page that read 1,000 entries and matched none says so,
	// and its next page has the match.
	rare := bulkThenRare(t, c)
	run(t, ctx, "filter a deep route by task", chromedp.Navigate(url+"/jobs?route=bulk&task=send_email"), chromedp.WaitVisible(chromedp.CSS("p.empty")))
	if got := text(t, ctx, "p.empty"); !strings.Contains(got, "None of the jobs this page read matched") {
		t.Fatalf("an empty filtered page with more to read says %q", got)
	}
	run(t, ctx, "follow the next page", chromedp.Click(chromedp.CSS("#next")), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	if got := text(t, ctx, "table.jobs tbody"); !strings.Contains(got, rare) {
		t.Fatalf("the next page lists %q; want the send_email job %s", got, rare)
	}
}
