package runtime_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// hostilePage is what a site the operator visits may serve: it tries, with
// what a page can send without the server's consent, to submit a job (a
// no-cors fetch with a text/plain JSON body), to pause the default route (a
// form of enctype text/plain, into a hidden frame), to replay every dead job
// (a no-cors fetch), and to read the job list (a plain fetch). API is
// replaced by the API's origin.
const hostilePage = `<!doctype html>
<html><body>
<form id="pause" method="post" enctype="text/plain" target="sink" action="API/api/v1/routes/default/pause"><input name='{"a":"' value='"}'></form>
<script>
window.results = {};
async function attempt(name, p) {
  try {
    const v = await p;
    window.results[name] = typeof v === "string" ? "read: " + v : "opaque " + v.type + " " + v.status;
  } catch (e) {
    window.results[name] = "error: " + e.name;
  }
}
(async () => {
  await attempt("submit", fetch("API/api/v1/jobs", {mode: "no-cors", method: "POST", headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({name: "t_echo", args: {Text: "from a hostile page"}})}));
  await attempt("replay-all", fetch("API/api/v1/dlq/replay", {mode: "no-cors", method: "POST"}));
  await attempt("read", fetch("API/api/v1/jobs").then(r => r.text()));
  const sink = document.createElement("iframe");
  sink.name = "sink";
  document.body.appendChild(sink);
  sink.addEventListener("load", () => { window.results.pause = "submitted"; window.done = true; });
  document.getElementById("pause").submit();
})();
</script>
</body></html>`

// A page of another origin, open in the operator's browser while the API
// runs on loopback without a token, can neither act through the API nor
// read it: no job is created, the route is not paused, the dead job is not
// replayed, and the page reads nothing. Both a page of another site
// (localhost against 127.0.0.1) and one on another port of the same host
// try. The dashboard's own forms, in the same browser, still act.
func TestBrowser_APageOfAnotherOriginCannotDriveOrReadTheAPI(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	dead := aDeadJob(t, c, "stays dead")
	in := runtime.NewInspector(c, testtasks.Register)
	before := jobCount(t, in)

	// The API, counting what reaches it, so the test knows each attempt
	// arrived before it looks at Redis.
	apiSrv := serveCountingAPI(t, in)
	api := apiSrv.URL // http://127.0.0.1:port

	page := strings.ReplaceAll(hostilePage, "API", api)
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(hostile.Close)
	port := hostile.URL[strings.LastIndex(hostile.URL, ":")+1:]

	for _, origin := range []string{"http://localhost:" + port, "http://127.0.0.1:" + port} {
		apiSrv.forget()
		run(t, ctx, "open the hostile page at "+origin, chromedp.Navigate(origin+"/"))
		waitJS(t, ctx, "the page's attempts to end", `window.done === true`)
		waitFor(t, 10*time.Second, "every attempt to reach the API", func() bool {
			return apiSrv.reachedAll("POST /api/v1/jobs", "POST /api/v1/dlq/replay", "GET /api/v1/jobs", "POST /api/v1/routes/default/pause")
		})
		results, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`window.results`))
		if err != nil {
			t.Fatal(err)
		}
		if got := results["read"]; !strings.HasPrefix(got, "error: ") {
			t.Errorf("page at %s read the job list: %q; want a failed fetch", origin, got)
		}
		if n := jobCount(t, in); n != before {
			t.Errorf("page at %s: %d jobs, %d before; want none created", origin, n, before)
		}
		if routePaused(t, in, "default") {
			t.Errorf("page at %s paused the default route", origin)
		}
		if st := jobStatus(t, c, dead); st != runtime.StatusFailed {
			t.Errorf("page at %s: the dead job is %s; want it left failed (not replayed)", origin, st)
		}
		if t.Failed() {
			t.Fatalf("the page's results: %v", results)
		}
	}

	// The dashboard, in the same browser, from its own origin: its forms act.
	run(t, ctx, "pause from the dashboard", chromedp.Navigate(api+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#route-default button[name=pause]`)),
		chromedp.Click(chromedp.CSS(`#route-default button[name=pause]`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if !routePaused(t, in, "default") {
		t.Fatal("the dashboard's own Pause did not pause the route")
	}
}

// aDeadJob enqueues a t_note job of text that fails without retry, has a
// worker run it until it is dead, stops the worker and returns the job's id.
func aDeadJob(t *testing.T, c *runtime.Client, text string) string {
	t.Helper()
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
		return runtime.None{}, runtime.SkipRetry
	})
	stopWorker := startWorker(t, w)
	dead, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the job to die", func() bool { return jobStatus(t, c, dead) == runtime.StatusFailed })
	stopWorker()
	return dead
}

// countingAPI is the API server, counting the requests that reach it by
// method and path.
type countingAPI struct {
	*httptest.Server
	mu      sync.Mutex
	reached map[string]int
}

func serveCountingAPI(t *testing.T, in *admin.Inspector) *countingAPI {
	t.Helper()
	a := &countingAPI{reached: map[string]int{}}
	h := runtime.APIHandler(in, runtime.APIOptions{})
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.reached[r.Method+" "+r.URL.Path]++
		a.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(a.Close)
	return a
}

// forget clears the counts.
func (a *countingAPI) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.reached)
}

// reachedAll tells whether every request named ("METHOD /path") has reached
// the API since the counts were last cleared.
func (a *countingAPI) reachedAll(requests ...string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range requests {
		if a.reached[r] == 0 {
			return false
		}
	}
	return true
}
