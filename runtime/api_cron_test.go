package runtime_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// POST /api/v1/cron/{name}/run enqueues one job of the entry now (201
// {"id"}, as the served document describes it), and that job runs; an
// entry that is not registered is a 404 naming it.
func TestAPI_RunACronEntryNow(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newSpecRig(t, c)
		v, ok := r.conforms(http.StatusCreated, "POST", "/api/v1/cron/t_tick/run", "").(map[string]any)
		id, _ := v["id"].(string)
		if !ok || id == "" {
			t.Fatalf("POST /api/v1/cron/t_tick/run answered %v; want {\"id\"}", v)
		}
		waitFor(t, 20*time.Second, "the job run now to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
		m := r.answerConforms(http.StatusNotFound, "POST", "/api/v1/cron/nightly_report/run", "")
		if msg := fmt.Sprint(m["error"]); !strings.Contains(msg, "nightly_report") || !strings.Contains(msg, "t_tick") {
			t.Fatalf("run of an unknown entry: %v; want a 404 naming it and the entries there are", m)
		}
	})
}
