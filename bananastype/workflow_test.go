package bananastype_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
)

// A workflow's JSON: "id" is each step's label, "after" [] for a first
// step, "result" null until it completed, unset times null; it reads back
// into the same workflow.
func TestWorkflow_JSONIsTheOneShapeAndReadsBack(t *testing.T) {
	created := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	w := bananastype.Workflow{ID: "W1", Status: "running", CreatedAt: created, Steps: []bananastype.WorkflowStep{
		{Label: "split", Name: "wf_split", JobID: "J1.default", Status: "completed"},
		{Label: "join", Name: "wf_join", JobID: "J2.default", Status: "pending", After: []string{"split"}},
	}}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	steps, _ := m["steps"].([]any)
	first, _ := steps[0].(map[string]any)
	for key, want := range map[string]any{"id": "W1", "status": "running", "created_at": "2026-11-27T03:00:00Z", "ended_at": nil, "result": nil} {
		if !reflect.DeepEqual(m[key], want) {
			t.Errorf("%s = %#v; want %#v (in %s)", key, m[key], want, b)
		}
	}
	if first["id"] != "split" || first["job_id"] != "J1.default" || !reflect.DeepEqual(first["after"], []any{}) || first["error"] != nil {
		t.Errorf("first step = %v; want id split, after [] and no error", first)
	}
	var back bananastype.Workflow
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != w.ID || !back.CreatedAt.Equal(created) || len(back.Steps) != 2 || back.Steps[1].Label != "join" || back.Steps[1].After[0] != "split" || back.Result != nil {
		t.Fatalf("read back %+v; want %+v", back, w)
	}
	w.Status, w.Result = "completed", json.RawMessage(`"[3 6]"`)
	if b, _ := json.Marshal(w); !json.Valid(b) || !reflect.DeepEqual(decodeJSON(t, b)["result"], "[3 6]") {
		t.Fatalf("completed workflow = %s; want its result", b)
	}
}

// A page of workflows lists its rows without their steps, each result
// null until its workflow completed, and an empty page lists [] (not
// null); it reads back into the same page.
func TestWorkflowPage_ListsRowsAndReadsBack(t *testing.T) {
	if b, _ := json.Marshal(bananastype.WorkflowPage{}); string(b) != `{"workflows":[],"next":""}` {
		t.Fatalf("empty page = %s; want no rows and no next", b)
	}
	p := bananastype.WorkflowPage{Next: "c1", Workflows: []bananastype.Workflow{{ID: "W1", Status: "failed", Task: "wf_join", FailedStep: "split"}}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := decodeJSON(t, b)["workflows"].([]any)
	row, _ := rows[0].(map[string]any)
	if _, ok := row["steps"]; ok || row["result"] != nil || row["failed_step"] != "split" {
		t.Fatalf("row = %v; want no steps, result null, failed_step split", row)
	}
	var back bananastype.WorkflowPage
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Next != "c1" || len(back.Workflows) != 1 || back.Workflows[0].ID != "W1" || back.Workflows[0].FailedStep != "split" || back.Workflows[0].Task != "wf_join" {
		t.Fatalf("read back %+v; want %+v", back, p)
	}
}
