package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

func failedWorkflow() *bananastype.Workflow {
	return &bananastype.Workflow{ID: "W1", Status: "failed", CreatedAt: time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC),
		Steps: []bananastype.WorkflowStep{
			{Label: "split", Name: "wf_split", JobID: "J1.default", Status: "completed"},
			{Label: "left", Name: "wf_left", JobID: "J2.default", Status: "failed", After: []string{"split"}, Error: "left broke\nstack here"},
			{Label: "both", Status: "canceled", After: []string{"split", "left"}, Error: "canceled with its workflow"},
		}}
}

// `workflow ID` prints the status, then one row per step: its label, task,
// job, status, predecessors and the first line of its error; --json prints
// the workflow's JSON.
func TestWorkflow_PrintsTheStatusThenTheSteps(t *testing.T) {
	f := &fakeAdmin{workflows: map[string]*bananastype.Workflow{"W1": failedWorkflow()}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "workflow", "W1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "workflow W1: failed (created 2026-11-27T03:00:00Z, ended -)") {
		t.Fatalf("first line %q", lines[0])
	}
	want := [][]string{
		{"STEP", "TASK", "JOB", "STATUS", "AFTER", "ERROR"},
		{"split", "wf_split", "J1.default", "completed", "-", "-"},
		{"left", "wf_left", "J2.default", "failed", "split", "left", "broke"},
		{"both", "(gather)", "-", "canceled", "split,left", "canceled", "with", "its", "workflow"},
	}
	for i, w := range want {
		if got := strings.Fields(lines[2+i]); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("row %d = %q; want %q", i, got, w)
		}
	}
	js := wantRun(t, &fakeApp{admin: f}, 0, "", "workflow", "W1", "--json")
	var back map[string]any
	if err := json.Unmarshal([]byte(js), &back); err != nil || back["status"] != "failed" || back["result"] != nil || len(back["steps"].([]any)) != 3 {
		t.Fatalf("--json = %s (%v)", js, err)
	}
}

// `workflow cancel ID` and `workflow retry ID` act, say what they did, and
// print the workflow after; a workflow not found exits 1 naming it, a
// missing id exits 2.
func TestWorkflow_CancelAndRetryActAndSaySo(t *testing.T) {
	f := &fakeAdmin{workflows: map[string]*bananastype.Workflow{"W1": failedWorkflow()}, retried: 2}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "workflow", "retry", "W1"); !strings.HasPrefix(out, "workflow W1: 2 step(s) run again\n") {
		t.Fatalf("retry printed %q", out)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "workflow", "cancel", "W1"); !strings.HasPrefix(out, "canceled workflow W1") || !strings.Contains(out, "workflow W1: canceled") {
		t.Fatalf("cancel printed %q", out)
	}
	if fmt.Sprint(f.acted) != "[retry workflow W1 cancel workflow W1]" {
		t.Fatalf("acted %v", f.acted)
	}
	wantRun(t, &fakeApp{admin: f}, 1, "workflow: workflow not found: W9\n", "workflow", "W9")
	wantRun(t, &fakeApp{admin: f}, 1, "workflow: workflow not found: W9\n", "workflow", "retry", "W9")
	wantRun(t, &fakeApp{admin: f}, 2, "workflow: want one workflow ID after cancel\n", "workflow", "cancel")
	wantRun(t, &fakeApp{admin: f}, 2, "workflow: want one workflow ID\n", "workflow")
}

// `job ID` says the workflow a step's job belongs to.
func TestJob_ShowsItsWorkflow(t *testing.T) {
	f := &fakeAdmin{jobs: map[string]*bananastype.Job{jobID: {ID: jobID, Name: "wf_left", Status: "pending", Workflow: "W1"}}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", jobID)
	if !hasRow(out, "workflow", "W1") {
		t.Fatalf("job printed %q; want a workflow W1 row", out)
	}
}

// hasRow reports whether out has a line of the two fields key and value.
func hasRow(out, key, value string) bool {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == key && f[1] == value {
			return true
		}
	}
	return false
}

// `workflows` prints one row per workflow (id, status, task, created,
// ended, failed step) and the next page's cursor; its flags reach the
// admin layer; --json prints the page; a refused filter exits 2 naming it.
func TestWorkflows_ListsAPageWithItsFilters(t *testing.T) {
	at := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	f := &fakeAdmin{wfPage: bananastype.WorkflowPage{Next: "5:W0", Workflows: []bananastype.Workflow{
		{ID: "W2", Status: "running", Task: "wf_join", CreatedAt: at},
		{ID: "W1", Status: "failed", Task: "wf_join", CreatedAt: at, EndedAt: at.Add(time.Minute), FailedStep: "left"},
	}}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "workflows", "--status", "failed", "--task", "wf_join", "--limit", "2", "--cursor", "9:W3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := [][]string{
		{"ID", "STATUS", "TASK", "CREATED", "ENDED", "FAILED", "STEP"},
		{"W2", "running", "wf_join", "2026-11-27T03:00:00Z", "-", "-"},
		{"W1", "failed", "wf_join", "2026-11-27T03:00:00Z", "2026-11-27T03:01:00Z", "left"},
		{"more:", "--cursor", "5:W0"},
	}
	for i, w := range want {
		if i >= len(lines) || fmt.Sprint(strings.Fields(lines[i])) != fmt.Sprint(w) {
			t.Fatalf("printed %q; row %d want %q", out, i, w)
		}
	}
	if q := f.wfQueries[0]; q.Status != "failed" || q.Task != "wf_join" || q.Limit != 2 || q.Cursor != "9:W3" {
		t.Fatalf("query %+v", q)
	}
	js := wantRun(t, &fakeApp{admin: f}, 0, "", "workflows", "--json")
	var back struct {
		Workflows []map[string]any `json:"workflows"`
		Next      string           `json:"next"`
	}
	if err := json.Unmarshal([]byte(js), &back); err != nil || len(back.Workflows) != 2 || back.Next != "5:W0" || back.Workflows[1]["failed_step"] != "left" {
		t.Fatalf("--json = %s (%v)", js, err)
	}
	bad := &fakeAdmin{errs: map[string]error{"Workflows": admin.BadQuery("status", "status %q: use pending, running, completed, failed or canceled", "x")}}
	if out := wantRun(t, &fakeApp{admin: bad}, 2, "workflows: bad query: status \"x\": use pending, running, completed, failed or canceled\n", "workflows", "--status", "x"); out != "" {
		t.Fatalf("printed %q", out)
	}
	empty := &fakeAdmin{}
	if out := wantRun(t, &fakeApp{admin: empty}, 0, "", "workflows"); strings.TrimSpace(out) != "no workflows" {
		t.Fatalf("an empty list printed %q", out)
	}
}
