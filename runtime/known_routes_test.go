package runtime_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// A route that `pause` knows shows in `queues`, the API's queues and the
// dashboard's overview with zeros although it holds no job: a registered
// task's route, a route paused, one given limits, one sharded. A program
// that registers no task still shows those an operator paused, limited or
// sharded.
func TestQueues_KnownRoutesWithoutJobsShowWithZeros(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.ok("pause", "email") // the route of send_email: no job ever
	a.ok("route", "shards", "hot", "3")
	a.ok("limits", "lim", "--max-running", "2")
	a.ok("pause", "lim")

	var qs []struct {
		Route                                string
		High, Normal, Low, Scheduled, Active int
		Dead                                 int
		Paused                               bool
	}
	if err := json.Unmarshal([]byte(a.ok("queues", "--json")), &qs); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, q := range qs {
		if q.High+q.Normal+q.Low+q.Scheduled+q.Active+q.Dead != 0 {
			t.Fatalf("queues: %+v holds jobs; want zeros", q)
		}
		got[q.Route] = q.Paused
	}
	want := map[string]bool{"default": false, "email": true, "images": false, "hot": false, "lim": true}
	if len(got) != len(want) {
		t.Fatalf("queues lists %v; want %v", got, want)
	}
	for r, p := range want {
		if paused, ok := got[r]; !ok || paused != p {
			t.Fatalf("queues lists %v; want %v", got, want)
		}
	}

	// A program without the tasks: what an operator set is still known.
	c := connect(t, redistest.Shared(t).URL(), runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	api := serveAPI(t, runtime.NewInspector(c), runtime.APIOptions{})
	code, body := api.do(http.MethodGet, "/api/v1/queues", "")
	listed := map[string]bool{}
	for _, q := range body.([]any) {
		m := q.(map[string]any)
		listed[m["route"].(string)] = m["paused"].(bool)
	}
	if code != http.StatusOK || len(listed) != 3 || !listed["email"] || !listed["lim"] || listed["hot"] {
		t.Fatalf("GET /api/v1/queues without the tasks = %d %v; want email and lim paused, hot", code, listed)
	}

	ctx := tab(t)
	run(t, ctx, "open the overview", chromedp.Navigate(api.url+"/"), chromedp.WaitVisible(chromedp.CSS("#route-email")))
	for _, r := range []string{"email", "hot", "lim"} {
		if got := text(t, ctx, "#route-"+r+" [data-col=normal]"); got != "0" {
			t.Fatalf("overview: route %s normal = %q; want 0", r, got)
		}
	}
	if got := text(t, ctx, "#route-email [data-col=state]"); !strings.Contains(got, "paused") {
		t.Fatalf("overview: email's state = %q; want paused", got)
	}
}
