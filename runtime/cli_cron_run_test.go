package runtime_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	crontasks "github.com/bananas-go/bananas/examples/cron/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// `cron run NAME` enqueues one job of the entry now, on its route, and
// prints its id; the entry's schedule is not touched (never run, as
// before). An unknown name is a usage error naming the entries there are.
func TestCLI_CronRunEnqueuesOneJobNow(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": redistest.Shared(t).URL(), "BANANAS_NAMESPACE": redistest.Namespace(t), "LOG_LEVEL": "error"}
	getenv := func(k string) string { return env[k] }
	var out, errOut bytes.Buffer
	if code := runtime.RunCommand(context.Background(), []string{"cron", "run", "nightly_report"}, getenv, &out, &errOut, crontasks.Register); code != 0 {
		t.Fatalf("cron run nightly_report = %d:\n%s%s", code, out.String(), errOut.String())
	}
	id := strings.TrimSpace(out.String())
	c := connect(t, env["REDIS_URL"], runtime.WithNamespace(env["BANANAS_NAMESPACE"]))
	info, err := c.Job(ctxT(t), id)
	if err != nil || info.Name != "nightly_report" || info.Route != "reports" || info.Status != runtime.StatusPending {
		t.Fatalf("cron run printed %q: job %+v, %v; want a pending nightly_report job of route reports", id, info, err)
	}
	in := runtime.NewInspector(c, crontasks.Register)
	entries, err := in.Cron(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name == "nightly_report" && (e.RunCount != 0 || !e.LastRun.IsZero() || e.LastJob != "") {
			t.Fatalf("nightly_report after cron run = %+v; want its schedule untouched", e)
		}
	}
	out.Reset()
	errOut.Reset()
	code := runtime.RunCommand(context.Background(), []string{"cron", "run", "weekly"}, getenv, &out, &errOut, crontasks.Register)
	if msg := errOut.String(); code != 2 || !strings.Contains(msg, `"weekly"`) || !strings.Contains(msg, "nightly_report") {
		t.Fatalf("cron run weekly = %d:\n%s; want a usage error (2) naming it and the entries there are", code, msg)
	}
}
