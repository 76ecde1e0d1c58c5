package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime/admin"
)

// A workflow's body is read step by step, its keys matched exactly, and
// handed to the admin layer as written; the answer is 201 with the
// workflow's id, each step's job id and the workflow's URL.
func TestSubmitWorkflow_ReadsTheStepsAndAnswersTheirJobs(t *testing.T) {
	f := &fakeAdmin{}
	r := send(t, newAPI(f, Config{}), "POST", "/api/v1/workflows",
		`{"steps": [{"id": "a", "name": "t", "args": {"n": 1}}, {"id": "b", "name": "t", "after": ["a"]}, {"id": "c", "name": "u", "after": ["a", "b"]}]}`)
	if r.status != http.StatusCreated || r.body["id"] != "w1" || r.header.Get("Location") != "/api/v1/workflows/w1" {
		t.Fatalf("answer %d %v %s", r.status, r.header, r.raw)
	}
	if steps, _ := r.body["steps"].(map[string]any); steps["a"] != "ja" || steps["c"] != "jc" {
		t.Fatalf("steps = %v, want each step's job id by its id", r.body["steps"])
	}
	got := f.wfSub.Steps
	if len(got) != 3 || got[0].ID != "a" || string(got[0].Args) != `{"n": 1}` || got[0].After != nil ||
		got[1].Args != nil || fmt.Sprint(got[1].After) != "[a]" || got[2].Name != "u" || fmt.Sprint(got[2].After) != "[a b]" {
		t.Fatalf("submitted %+v", got)
	}
}

// Every malformed body is a 400 naming where it is wrong, and reaches no
// admin call.
func TestSubmitWorkflow_MalformedBodyIs400NamingTheField(t *testing.T) {
	for body, field := range map[string]string{
		``:                "",
		`null`:            "",
		`[]`:              "",
		`{"steps": 1}`:    "steps",
		`{"steps": null}`: "steps",
		`{"steps": []}`:   "steps",
		`{"Steps": []}`:   "Steps",
		`{"steps": [1]}`:  "steps[0]",
		`{"steps": [{"id": "a", "name": "t"}, 2]}`:                                               "steps[1]",
		`{"steps": [{"id": 7, "name": "t"}]}`:                                                    "steps[0].id",
		`{"steps": [{"name": "t"}]}`:                                                             "steps[0].id",
		`{"steps": [{"id": "a"}]}`:                                                               "steps[0].name",
		`{"steps": [{"id": "a", "name": "t", "prio": 1}]}`:                                       "steps[0].prio",
		`{"steps": [{"id": "a", "name": "t", "after": "b"}]}`:                                    "steps[0].after",
		`{"steps": [{"id": "a", "name": "t", "after": null}]}`:                                   "steps[0].after",
		`{"steps": [{"id": "a", "name": "t", "after": [1]}]}`:                                    "steps[0].after",
		`{"steps": [{"id": "a", "name": "t"}]} {}`:                                               "",
		`{"steps": [{"id": "a", "name": "t", "args": {}}], "final": "a"}`:                        "final",
		`{"steps": [{"id": "a", "name": "t", "args": {}}, {"Id": "b"}]}`:                         "steps[1].Id",
		`{"steps": [{"id": "a", "name": "t", "args": {}}, {"id": "b", "name": "t", "ARGS": 1}]}`: "steps[1].ARGS",
	} {
		f := &fakeAdmin{}
		r := send(t, newAPI(f, Config{}), "POST", "/api/v1/workflows", body)
		r.refused(t, http.StatusBadRequest, field)
		if f.wfSub.Steps != nil {
			t.Fatalf("%s reached the admin layer: %+v", body, f.wfSub)
		}
	}
	many := `{"steps": [` + strings.Repeat(`{"id": "a", "name": "t"},`, admin.MaxWorkflowSteps) + `{"id": "a", "name": "t"}]}`
	send(t, newAPI(&fakeAdmin{}, Config{MaxBody: 1 << 20}), "POST", "/api/v1/workflows", many).refused(t, http.StatusBadRequest, "steps")
}

// A workflow not found is a 404 on every route of it; cancel and retry act
// and answer the workflow after the call; they are actions, refused in
// read-only mode.
func TestWorkflowRoutes_ReadCancelRetryAndTheirRefusals(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	if r := send(t, h, "GET", "/api/v1/workflows/w9", ""); r.status != http.StatusOK || r.body["id"] != "w9" || r.body["result"] != nil {
		t.Fatalf("GET = %d %s", r.status, r.raw)
	}
	for _, action := range []string{"cancel", "retry"} {
		r := send(t, h, "POST", "/api/v1/workflows/w9/"+action, "")
		if steps, _ := r.body["steps"].([]any); r.status != http.StatusOK || len(steps) != 2 {
			t.Fatalf("POST %s = %d %s", action, r.status, r.raw)
		}
	}
	if fmt.Sprint(f.wfCalls) != "[cancel w9 retry w9]" {
		t.Fatalf("calls = %v", f.wfCalls)
	}
	missing := &fakeAdmin{err: fmt.Errorf("%w: w0", admin.ErrWorkflowNotFound)}
	for _, req := range [][2]string{{"GET", ""}, {"POST", "/cancel"}, {"POST", "/retry"}} {
		send(t, newAPI(missing, Config{}), req[0], "/api/v1/workflows/w0"+req[1], "").refused(t, http.StatusNotFound, "")
	}
	ro := &fakeAdmin{}
	for _, path := range []string{"/api/v1/workflows/w9/cancel", "/api/v1/workflows/w9/retry"} {
		send(t, newAPI(ro, Config{ReadOnly: true}), "POST", path, "").refused(t, http.StatusForbidden, "")
	}
	send(t, newAPI(ro, Config{ReadOnly: true}), "POST", "/api/v1/workflows", `{"steps": []}`).refused(t, http.StatusForbidden, "")
	if len(ro.wfCalls) != 0 {
		t.Fatalf("read-only mode acted: %v", ro.wfCalls)
	}
	send(t, newAPI(&fakeAdmin{}, Config{Token: "s"}), "GET", "/api/v1/workflows/w9", "").refused(t, http.StatusUnauthorized, "")
}

// GET /api/v1/workflows hands its filters to the admin layer and answers
// {"workflows": [...], "next": ...}, each row without steps; a bad limit
// is a 400 naming it, and the admin layer's refusal of a filter a 400 too.
func TestListWorkflows_PassesTheFiltersAndAnswersAPage(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	r := send(t, h, "GET", "/api/v1/workflows?status=failed&task=t&cursor=9:w&limit=20", "")
	if r.status != http.StatusOK || r.body["next"] != "1:w1" {
		t.Fatalf("GET = %d %s", r.status, r.raw)
	}
	rows, _ := r.body["workflows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("rows %s", r.raw)
	}
	row := rows[0].(map[string]any)
	if _, has := row["steps"]; has || row["id"] != "w1" || row["task"] != "t" || row["status"] != "running" {
		t.Fatalf("row %v; want id, status and task, no steps", row)
	}
	if q := f.wfQuery; q.Status != "failed" || q.Task != "t" || q.Cursor != "9:w" || q.Limit != 20 {
		t.Fatalf("query %+v", q)
	}
	for _, l := range []string{"0", "501", "x"} {
		send(t, h, "GET", "/api/v1/workflows?limit="+l, "").refused(t, http.StatusBadRequest, "limit")
	}
	bad := &fakeAdmin{err: admin.BadQuery("status", "status %q: use pending, running, completed, failed or canceled", "dancing")}
	send(t, newAPI(bad, Config{}), "GET", "/api/v1/workflows?status=dancing", "").refused(t, http.StatusBadRequest, "status")
}
