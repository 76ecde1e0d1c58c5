package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A submission's expire (a duration or an RFC 3339 time) makes a job that
// does not start by then end expired: GET /api/v1/jobs/{id} says so, the
// OpenAPI document lists the status and the field, and /metrics counts it.
// A bad expire is a 400 naming the field.
func TestAPI_ExpireEndsAJobExpiredShownEverywhere(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		for _, bad := range []string{`"soon"`, `"-5s"`, `5`} {
			got := a.want(http.StatusBadRequest, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"x"},"expire":`+bad+`}`)
			if got["field"] != "expire" {
				t.Fatalf("expire %s: %v; want a 400 naming the field", bad, got)
			}
		}
		a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"x"},"expire":"10m"}`)
		id := a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"gone"},"expire":"2000-01-01T00:00:00Z"}`)["id"].(string)
		startWorker(t, w)
		waitFor(t, 10*time.Second, "job "+id+" to be expired", func() bool {
			return a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id, "")["status"] == "expired"
		})
		job := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id, "")
		if args, _ := job["args"].(map[string]any); args["Text"] != "gone" {
			t.Fatalf("expired job = %v; want its args", job)
		}
		_, doc := a.do("GET", "/api/v1/openapi.json", "")
		raw, _ := json.Marshal(doc)
		if !strings.Contains(string(raw), `"expired"`) || !strings.Contains(string(raw), `"expire"`) {
			t.Fatal("the OpenAPI document names neither the status expired nor the field expire")
		}
		_, metrics := a.do("GET", "/metrics", "")
		if !strings.Contains(fmt.Sprint(metrics), `bananas_jobs_expired_total{route="default"} 1`) {
			t.Fatalf("/metrics does not count the expired job:\n%v", metrics)
		}
	})
}

// `enqueue --expire` takes a duration or a time; a bad one is a usage
// error naming the flag; `job ID` shows an expired job's status, and
// `enqueue --wait` of one says it expired.
func TestCLI_EnqueueExpireAndJobShowExpired(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	if code, _, errOut := a.run("enqueue", "count_words", `{"Body": "a"}`, "--expire", "soon"); code != runtime.ExitUsage || !strings.Contains(errOut, "--expire") {
		t.Fatalf("enqueue --expire soon = %d %q; want a usage error naming --expire", code, errOut)
	}
	c := connect(t, redistest.Shared(t).URL(), runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	tasks.Register(w)
	startWorker(t, w)
	code, _, errOut := a.run("enqueue", "count_words", `{"Body": "a"}`, "--expire", "2000-01-01T00:00:00Z", "--wait", "--timeout", "20s")
	if code != 1 || !strings.Contains(errOut, "expired before it started") {
		t.Fatalf("enqueue --wait of an expired job = %d %q; want it to say the job expired", code, errOut)
	}
	id := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "b"}`, "--expire", "2000-01-01T00:00:00Z"))
	waitFor(t, 10*time.Second, "job "+id+" to show expired", func() bool {
		return strings.Contains(a.ok("job", id), "expired")
	})
}
