package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// fakeAdmin answers as the admin layer would, without Redis: err, when set,
// is every call's error, and the calls it takes are kept.
type fakeAdmin struct {
	// The interface embedded: a method the fake does not answer fails the
	// test that reaches it (a nil call), and an action added to the admin
	// layer needs no change here until a test of the API calls it.
	admin.Admin

	err      error
	batchErr error // SubmitBatch's error; by default a refusal of what the API refused
	readyErr error
	status   admin.Status // of the job Job and Result answer

	subs    []admin.Submission
	refused []admin.BatchRefusal
	query   admin.JobQuery
	route   string
	task    string
	older   time.Duration
	window  time.Duration
	shards  int
	limits  admin.Limits
	patch   admin.LimitsPatch
	hquery  admin.HistoryQuery
	hpage   bananastype.HistoryPage
	wfSub   admin.WorkflowSubmission
	wfCalls []string // the workflow actions taken: "cancel ID", "retry ID"
	wfQuery admin.WorkflowQuery
	audits  []bananastype.AuditEntry // the audit entries recorded
}

var _ admin.Admin = (*fakeAdmin)(nil)

func (f *fakeAdmin) SignalWorkflow(_ context.Context, id, name string, payload json.RawMessage) error {
	f.wfCalls = append(f.wfCalls, "signal "+id+" "+name+" "+string(payload))
	return f.err
}

func (f *fakeAdmin) Submit(_ context.Context, s admin.Submission) (string, string, error) {
	f.subs = append(f.subs, s)
	if f.err != nil {
		return "", "", f.err
	}
	return "j1", "", nil
}

func (f *fakeAdmin) SubmitBatch(_ context.Context, subs []admin.Submission, refused []admin.BatchRefusal) ([]string, error) {
	f.subs, f.refused = subs, refused
	switch {
	case f.batchErr != nil:
		return nil, f.batchErr
	case len(refused) > 0:
		return nil, &admin.BatchError{Class: admin.BadInput, Msg: "refused", Jobs: refused}
	}
	ids := make([]string, len(subs))
	for i := range subs {
		ids[i] = "j" + string(rune('a'+i%26))
	}
	return ids, f.err
}

func (f *fakeAdmin) job(id string) (*bananastype.Job, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &bananastype.Job{ID: id, Name: "t", Status: f.status}, nil
}

func (f *fakeAdmin) Job(_ context.Context, id string) (*bananastype.Job, error) { return f.job(id) }

func (f *fakeAdmin) Jobs(_ context.Context, q admin.JobQuery) (bananastype.JobPage, error) {
	f.query = q
	return bananastype.JobPage{}, f.err
}

func (f *fakeAdmin) Result(_ context.Context, id string, _ time.Duration) (*bananastype.Job, error) {
	return f.job(id)
}

func (f *fakeAdmin) Cancel(context.Context, string) (admin.Status, error) { return "canceled", f.err }
func (f *fakeAdmin) Delete(context.Context, string) error                 { return f.err }
func (f *fakeAdmin) Replay(context.Context, string) error                 { return f.err }
func (f *fakeAdmin) RunNow(context.Context, string) error                 { return f.err }

func (f *fakeAdmin) ReplayDead(_ context.Context, route, task string) (int, error) {
	f.route, f.task = route, task
	return 2, f.err
}

func (f *fakeAdmin) PurgeDead(_ context.Context, route, task string, olderThan time.Duration) (int, error) {
	f.route, f.task, f.older = route, task, olderThan
	return 3, f.err
}

func (f *fakeAdmin) Routes(context.Context) ([]bananastype.Route, error) { return nil, f.err }
func (f *fakeAdmin) Pause(_ context.Context, route string) error         { f.route = route; return f.err }
func (f *fakeAdmin) CancelWaiting(_ context.Context, route, task string) (int, error) {
	f.route, f.task = route, task
	return 3, f.err
}
func (f *fakeAdmin) RunScheduled(_ context.Context, route, task string) (int, error) {
	f.route, f.task = route, task
	return 2, f.err
}
func (f *fakeAdmin) Resume(_ context.Context, route string) error { f.route = route; return f.err }
func (f *fakeAdmin) Shards(_ context.Context, route string) (int, error) {
	f.route = route
	return max(f.shards, 1), f.err
}

func (f *fakeAdmin) Limits(_ context.Context, route string) (admin.Limits, error) {
	f.route = route
	return f.limits, f.err
}

// SetLimits keeps the patch and answers the limits it sets (its max_running).
func (f *fakeAdmin) SetLimits(_ context.Context, route string, p admin.LimitsPatch) (admin.Limits, error) {
	f.route, f.patch = route, p
	if p.MaxRunning != nil && *p.MaxRunning != "" {
		f.limits.MaxRunning = len(*p.MaxRunning)
	}
	f.limits.Route = route
	return f.limits, f.err
}

func (f *fakeAdmin) Flows(_ context.Context, route string) (admin.Flows, error) {
	f.route = route
	return admin.Flows{Route: route, Busiest: []admin.Flow{{Task: "t", Key: "A", Running: 1, Parked: true}}}, f.err
}

// SetShards refuses n out of range as the admin layer does.
func (f *fakeAdmin) SetShards(_ context.Context, route string, n int) error {
	if n < 1 || n > 256 {
		return admin.BadQuery("shards", "invalid shards %d: shards is 1-256", n)
	}
	f.route, f.shards = route, n
	return f.err
}
func (f *fakeAdmin) Tasks() []admin.Task { return []admin.Task{{Name: "t"}} }
func (f *fakeAdmin) Cron(context.Context) ([]bananastype.Schedule, error) {
	return nil, f.err
}
func (f *fakeAdmin) RunCron(context.Context, string) (string, error) { return "j2", f.err }
func (f *fakeAdmin) Workers(context.Context) ([]admin.Worker, error) { return nil, f.err }

func (f *fakeAdmin) Schedules(context.Context) ([]bananastype.Schedule, error) { return nil, f.err }
func (f *fakeAdmin) Schedule(_ context.Context, id string) (bananastype.Schedule, error) {
	return bananastype.Schedule{ID: id, Source: bananastype.SourceData}, f.err
}
func (f *fakeAdmin) PutSchedule(_ context.Context, id string, s admin.ScheduleSubmission) (bananastype.Schedule, error) {
	f.subs = append(f.subs, admin.Submission{Name: s.Name, Args: s.Args})
	return bananastype.Schedule{ID: id, Source: bananastype.SourceData, Name: s.Name, Spec: s.Cron}, f.err
}
func (f *fakeAdmin) DeleteSchedule(context.Context, string) error        { return f.err }
func (f *fakeAdmin) PauseSchedule(context.Context, string, bool) error   { return f.err }
func (f *fakeAdmin) RunSchedule(context.Context, string) (string, error) { return "j3", f.err }
func (f *fakeAdmin) BackfillSchedule(context.Context, string, time.Time, time.Time) ([]string, error) {
	return []string{"j4"}, f.err
}

func (f *fakeAdmin) Stats(_ context.Context, window time.Duration) (admin.Stats, error) {
	f.window = window
	return admin.Stats{Window: window}, f.err
}

func (f *fakeAdmin) History(_ context.Context, q admin.HistoryQuery) (bananastype.HistoryPage, error) {
	f.hquery = q
	return f.hpage, f.err
}

func (f *fakeAdmin) OpenAPI() ([]byte, error) { return []byte(`{"openapi":"3.1.0"}`), f.err }
func (f *fakeAdmin) ArgsSchemas() (map[string]json.RawMessage, error) {
	return map[string]json.RawMessage{}, f.err
}
func (f *fakeAdmin) Ready(context.Context) error { return f.readyErr }

func (f *fakeAdmin) SubmitWorkflow(_ context.Context, s admin.WorkflowSubmission) (string, map[string]string, error) {
	f.wfSub = s
	if f.err != nil {
		return "", nil, f.err
	}
	jobs := map[string]string{}
	for i, st := range s.Steps {
		jobs[st.ID] = "j" + string(rune('a'+i%26))
	}
	return "w1", jobs, nil
}

// workflow is the workflow every read answers: a split and its successor.
func (f *fakeAdmin) workflow(id string) (*bananastype.Workflow, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &bananastype.Workflow{ID: id, Status: "running", Steps: []bananastype.WorkflowStep{
		{Label: "a", Name: "t", JobID: "ja", Status: "completed"},
		{Label: "b", Name: "t", JobID: "jb", Status: "pending", After: []string{"a"}},
	}}, nil
}

func (f *fakeAdmin) Workflow(_ context.Context, id string) (*bananastype.Workflow, error) {
	return f.workflow(id)
}

func (f *fakeAdmin) Workflows(_ context.Context, q admin.WorkflowQuery) (bananastype.WorkflowPage, error) {
	f.wfQuery = q
	if f.err != nil {
		return bananastype.WorkflowPage{}, f.err
	}
	w, _ := f.workflow("w1")
	w.Steps, w.Task = nil, "t"
	return bananastype.WorkflowPage{Workflows: []bananastype.Workflow{*w}, Next: "1:w1"}, nil
}

func (f *fakeAdmin) CancelWorkflow(_ context.Context, id string) (*bananastype.Workflow, error) {
	f.wfCalls = append(f.wfCalls, "cancel "+id)
	return f.workflow(id)
}

func (f *fakeAdmin) RetryWorkflow(_ context.Context, id string) (*bananastype.Workflow, int, error) {
	f.wfCalls = append(f.wfCalls, "retry "+id)
	w, err := f.workflow(id)
	return w, 1, err
}

func (f *fakeAdmin) Audit(_ context.Context, e bananastype.AuditEntry) error {
	f.audits = append(f.audits, e)
	return nil
}

func (f *fakeAdmin) AuditLog(_ context.Context, q admin.AuditQuery) (bananastype.AuditPage, error) {
	if q.Cursor != "" {
		return bananastype.AuditPage{}, admin.BadQuery("cursor", "cursor %q is not one a page gave", q.Cursor)
	}
	return bananastype.AuditPage{Entries: f.audits}, f.err
}

func (f *fakeAdmin) RotateKeys(context.Context) (queue.ResealCount, error) {
	f.wfCalls = append(f.wfCalls, "rotate keys")
	return queue.ResealCount{Resealed: 2, Already: 1}, f.err
}
