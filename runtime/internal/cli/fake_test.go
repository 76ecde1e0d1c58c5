package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// fakeAdmin is an admin layer of fixed answers that records what it was
// asked. A method a test did not expect to be called panics (the nil
// embedded Admin).
type fakeAdmin struct {
	admin.Admin

	// errs are the errors the methods return, by method name.
	errs map[string]error

	audits []bananastype.AuditEntry // the audit entries recorded

	id, warning string // Submit's answer
	submitted   []admin.Submission

	jobs    map[string]*bananastype.Job // Job's and Result's answers, by id
	waited  []time.Duration             // the waits Result was given
	page    bananastype.JobPage
	queries []admin.JobQuery

	canceled admin.Status // Cancel's answer
	acted    []string     // "pause default", "delete ID", ...

	tasks   []admin.Task
	routes  []bananastype.Route
	cron    []bananastype.Schedule
	workers []admin.Worker
	shards  int // Shards' answer, set by SetShards

	history   bananastype.HistoryPage // History's answer
	hqueries  []admin.HistoryQuery
	migrated  bool // MigrateHistory's answer
	migrateds int  // calls of MigrateHistory

	workflows map[string]*bananastype.Workflow // Workflow's answers, by id
	retried   int                              // RetryWorkflow's count
	wfPage    bananastype.WorkflowPage         // Workflows' answer
	wfQueries []admin.WorkflowQuery
}

func (f *fakeAdmin) Workflows(_ context.Context, q admin.WorkflowQuery) (bananastype.WorkflowPage, error) {
	f.wfQueries = append(f.wfQueries, q)
	if err := f.errs["Workflows"]; err != nil {
		return bananastype.WorkflowPage{}, err
	}
	return f.wfPage, nil
}

func (f *fakeAdmin) Submit(_ context.Context, s admin.Submission) (string, string, error) {
	f.submitted = append(f.submitted, s)
	if err := f.errs["Submit"]; err != nil {
		return "", "", err
	}
	return f.id, f.warning, nil
}

func (f *fakeAdmin) Job(_ context.Context, id string) (*bananastype.Job, error) {
	if j := f.jobs[id]; j != nil {
		return j, nil
	}
	return nil, admin.ErrJobNotFound
}

func (f *fakeAdmin) Result(ctx context.Context, id string, wait time.Duration) (*bananastype.Job, error) {
	f.waited = append(f.waited, wait)
	if err := f.errs["Result"]; err != nil {
		return nil, err
	}
	return f.Job(ctx, id)
}

func (f *fakeAdmin) Jobs(_ context.Context, q admin.JobQuery) (bananastype.JobPage, error) {
	f.queries = append(f.queries, q)
	return f.page, f.errs["Jobs"]
}

func (f *fakeAdmin) Cancel(_ context.Context, id string) (admin.Status, error) {
	f.acted = append(f.acted, "cancel "+id)
	return f.canceled, f.errs["Cancel"]
}

func (f *fakeAdmin) Delete(_ context.Context, id string) error {
	f.acted = append(f.acted, "delete "+id)
	return f.errs["Delete"]
}

func (f *fakeAdmin) RunNow(_ context.Context, id string) error {
	f.acted = append(f.acted, "run "+id)
	return f.errs["RunNow"]
}

func (f *fakeAdmin) RunScheduled(_ context.Context, route, task string) (int, error) {
	f.acted = append(f.acted, "run-scheduled "+route+" "+task)
	return 2, f.errs["RunScheduled"]
}

func (f *fakeAdmin) Pause(_ context.Context, route string) error {
	f.acted = append(f.acted, "pause "+route)
	return f.errs["Pause"]
}

func (f *fakeAdmin) Resume(_ context.Context, route string) error {
	f.acted = append(f.acted, "resume "+route)
	return f.errs["Resume"]
}

func (f *fakeAdmin) Shards(_ context.Context, route string) (int, error) {
	f.acted = append(f.acted, "shards "+route)
	return max(f.shards, 1), f.errs["Shards"]
}

func (f *fakeAdmin) SetShards(_ context.Context, route string, n int) error {
	if n < 1 || n > 256 {
		return admin.BadQuery("shards", "invalid shards %d: shards is 1-256", n)
	}
	f.acted = append(f.acted, fmt.Sprintf("set shards %s %d", route, n))
	f.shards = n
	return f.errs["SetShards"]
}

func (f *fakeAdmin) RunCron(_ context.Context, name string) (string, error) {
	f.acted = append(f.acted, "run "+name)
	return f.id, f.errs["RunCron"]
}

func (f *fakeAdmin) Tasks() []admin.Task { return f.tasks }
func (f *fakeAdmin) Routes(context.Context) ([]bananastype.Route, error) {
	return f.routes, f.errs["Routes"]
}
func (f *fakeAdmin) Cron(context.Context) ([]bananastype.Schedule, error) {
	return f.cron, f.errs["Cron"]
}
func (f *fakeAdmin) Workers(context.Context) ([]admin.Worker, error) {
	return f.workers, f.errs["Workers"]
}

func (f *fakeAdmin) History(_ context.Context, q admin.HistoryQuery) (bananastype.HistoryPage, error) {
	f.hqueries = append(f.hqueries, q)
	return f.history, f.errs["History"]
}

func (f *fakeAdmin) MigrateHistory(context.Context) (bool, error) {
	f.migrateds++
	return f.migrated, f.errs["MigrateHistory"]
}

// fakeApp is a program whose admin layer is a fakeAdmin.
type fakeApp struct {
	admin    *fakeAdmin
	embedded bool // REDIS_URL=mem://
	opened   int  // connections opened and not closed
	commands []Spec
}

func (a *fakeApp) Configure() error { return nil }

func (a *fakeApp) Open(context.Context) (Conn, error) {
	a.opened++
	return Conn{Admin: a.admin, Embedded: a.embedded, Close: func() error { a.opened--; return nil }}, nil
}

func (a *fakeApp) Commands() []Spec      { return a.commands }
func (a *fakeApp) Environment() []EnvVar { return nil }

// run runs the command line of args over app and returns its exit status,
// stdout and stderr. Every connection it opened must be closed.
func run(t *testing.T, app *fakeApp, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}, app)
	if app.opened != 0 {
		t.Errorf("%v left %d connection(s) open", args, app.opened)
	}
	return code, out.String(), errOut.String()
}

func (f *fakeAdmin) workflow(id string) (*bananastype.Workflow, error) {
	if w := f.workflows[id]; w != nil {
		return w, nil
	}
	return nil, fmt.Errorf("%w: %s", admin.ErrWorkflowNotFound, id)
}

func (f *fakeAdmin) Workflow(_ context.Context, id string) (*bananastype.Workflow, error) {
	return f.workflow(id)
}

func (f *fakeAdmin) CancelWorkflow(_ context.Context, id string) (*bananastype.Workflow, error) {
	f.acted = append(f.acted, "cancel workflow "+id)
	w, err := f.workflow(id)
	if err == nil && w.Status != "completed" {
		w.Status = "canceled"
	}
	return w, err
}

func (f *fakeAdmin) RetryWorkflow(_ context.Context, id string) (*bananastype.Workflow, int, error) {
	f.acted = append(f.acted, "retry workflow "+id)
	w, err := f.workflow(id)
	return w, f.retried, err
}

func (f *fakeAdmin) Audit(_ context.Context, e bananastype.AuditEntry) error {
	f.audits = append(f.audits, e)
	return nil
}

func (f *fakeAdmin) AuditLog(_ context.Context, q admin.AuditQuery) (bananastype.AuditPage, error) {
	if err := f.errs["AuditLog"]; err != nil {
		return bananastype.AuditPage{}, err
	}
	out := bananastype.AuditPage{Entries: f.audits}
	if q.Limit > 0 && len(out.Entries) > q.Limit {
		out.Entries, out.Next = out.Entries[:q.Limit], "next"
	}
	return out, nil
}
