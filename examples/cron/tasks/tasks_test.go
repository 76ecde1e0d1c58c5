package tasks_test

import (
	"context"
	"slices"
	"testing"

	"github.com/bananas-go/bananas/bananastest"
	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/examples/cron/tasks"
	"github.com/bananas-go/bananas/runtime"
)

func TestNightlyReport_RunNowEnqueuesAJobOnTheReportsRoute(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	id, err := h.Inspector.RunCron(context.Background(), "nightly_report")
	if err != nil {
		t.Fatal(err)
	}
	if job := bananastest.RequireEnqueued(t, h.Client, tasks.NightlyReport, nil); job.ID != id || job.Route != "reports" {
		t.Fatalf("enqueued %s on route %q, want %s on reports", job.ID, job.Route, id)
	}
	// Drain's worker runs the cron entries too, so a tick may add a job of
	// its own: the report is read for this job's end.
	report := h.Drain(t)
	if !slices.ContainsFunc(report.Ends, func(e bananastype.JobEnd) bool { return e.ID == id && e.Status() == runtime.StatusCompleted }) {
		t.Fatalf("report %s, want job %s completed", report, id)
	}
	bananastest.RequireNotEnqueued(t, h.Client, tasks.NightlyReport, nil)
}
