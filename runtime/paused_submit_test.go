package runtime_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// An enqueue to a paused route warns that the job waits until the route is
// resumed and says how; --wait that runs out says the route is paused. On
// a real redis-server, through the program's own command line.
func TestCLI_EnqueueToAPausedRouteWarnsAndWaitSaysPaused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.ok("pause", "default")
	code, out, errOut := a.run("enqueue", "count_words", `{"Body": "a b"}`)
	id := strings.TrimSpace(out)
	if code != 0 || !strings.Contains(errOut, "warning: route default is paused: job "+id+" waits") ||
		!strings.Contains(errOut, "resume with `app resume default`") || !strings.Contains(errOut, "no live worker takes route default") {
		t.Fatalf("enqueue to a paused route: exit %d, stdout %q, stderr %q; want the id and a warning that it is paused and how to resume", code, out, errOut)
	}
	code, _, errOut = a.run("enqueue", "count_words", `{"Body": "c"}`, "--wait", "--timeout", "1s")
	if code != 1 || !strings.Contains(errOut, "is still pending after --timeout 1s: route default is paused") || !strings.Contains(errOut, "app resume default") {
		t.Fatalf("enqueue --wait to a paused route: exit %d, stderr %q; want it to say the route is paused", code, errOut)
	}
	a.ok("resume", "default")
	if _, _, errOut := a.run("enqueue", "count_words", `{"Body": "d"}`); strings.Contains(errOut, "paused") {
		t.Fatalf("enqueue to a resumed route still warns: %q", errOut)
	}
}

// An API submission to a paused route is a 201 whose warning says the
// route is paused and how to resume it; once resumed, it no longer does.
func TestAPI_SubmissionToAPausedRouteCarriesAWarning(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		startWorker(t, w)
		waitFor(t, 10*time.Second, "the worker's heartbeat", func() bool {
			ws, _ := c.Workers(ctxT(t))
			return len(ws) > 0
		})
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		a.want(http.StatusOK, "POST", "/api/v1/routes/default/pause", "")
		got := a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"hi"}}`)
		msg, _ := got["warning"].(string)
		if !strings.Contains(msg, "route default is paused: job "+got["id"].(string)) || !strings.Contains(msg, "POST /api/v1/routes/default/resume") ||
			strings.Contains(msg, "no live worker") {
			t.Fatalf("submission to a paused route: %v; want a warning that it is paused, and no word of workers (one takes it)", got)
		}
		a.want(http.StatusOK, "POST", "/api/v1/routes/default/resume", "")
		// Whether a route is paused is read at most once a second for the warning.
		waitFor(t, 5*time.Second, "a submission without a warning once the route is resumed", func() bool {
			got := a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"hi"}}`)
			return got["warning"] == nil
		})
	})
}
