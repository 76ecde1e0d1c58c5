package runtime_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	quickstart "github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

// threeWorkflows runs, on c, a workflow that completes, one that fails at
// its explode step, and one that completes after it: newest first, the
// list is [ok2, boom, ok1].
func threeWorkflows(t *testing.T, c *runtime.Client) (ok1, boom, ok2 string) {
	t.Helper()
	ctx := ctxT(t)
	r := newWFRuns()
	r.setFail("explode", true)
	wfWorker(t, c, r)
	done := func(s runtime.Step[int]) string {
		id, err := s.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s.Await(ctx, id)
		return id
	}
	ok1 = done(runtime.Then(wfDouble.With(c).Step(1), wfDouble.With(c)))
	boom = done(runtime.Then(runtime.Then(wfDouble.With(c).Step(2), wfExplode.With(c)), wfDouble.With(c)))
	ok2 = done(runtime.Then(wfDouble.With(c).Step(3), wfDouble.With(c)))
	return ok1, boom, ok2
}

// The admin layer lists every workflow newest first with its status, its
// final step's task and its failed step, filters by status and task, and
// pages with a cursor; a bad status, limit or cursor is refused naming it.
func TestWorkflows_ListedNewestFirstFilteredAndPaged(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		ok1, boom, ok2 := threeWorkflows(t, c)
		in := runtime.NewInspector(c)
		page, err := in.Workflows(ctx, admin.WorkflowQuery{Status: "", Task: "", Cursor: "", Limit: 0})
		if err != nil || len(page.Workflows) != 3 || page.Next != "" {
			t.Fatalf("Workflows = %+v, %v", page, err)
		}
		got := page.Workflows
		if got[0].ID != ok2 || got[1].ID != boom || got[2].ID != ok1 {
			t.Fatalf("order %s %s %s; want %s %s %s", got[0].ID, got[1].ID, got[2].ID, ok2, boom, ok1)
		}
		b := got[1]
		if b.Status != "failed" || b.Task != "wf_double" || b.FailedStep != "wf_explode" || b.CreatedAt.IsZero() || b.EndedAt.IsZero() || b.Steps != nil {
			t.Fatalf("the failed row %+v", b)
		}
		if got[0].Status != "completed" || got[0].FailedStep != "" {
			t.Fatalf("the completed row %+v", got[0])
		}
		failed, err := in.Workflows(ctx, admin.WorkflowQuery{Status: "failed", Task: "", Cursor: "", Limit: 0})
		if err != nil || len(failed.Workflows) != 1 || failed.Workflows[0].ID != boom {
			t.Fatalf("failed ones = %+v, %v", failed, err)
		}
		if none, err := in.Workflows(ctx, admin.WorkflowQuery{Status: "", Task: "wf_explode", Cursor: "", Limit: 0}); err != nil || len(none.Workflows) != 0 {
			t.Fatalf("task wf_explode (no final step of it) = %+v, %v", none, err)
		}
		var ids []string
		cursor := ""
		for range 4 {
			p, err := in.Workflows(ctx, admin.WorkflowQuery{Status: "", Task: "wf_double", Cursor: cursor, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range p.Workflows {
				ids = append(ids, w.ID)
			}
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		if strings.Join(ids, ",") != strings.Join([]string{ok2, boom, ok1}, ",") {
			t.Fatalf("pages of one gave %v", ids)
		}
		for _, q := range []struct{ status, cursor, field string }{{"dancing", "", "status"}, {"", "nope", "cursor"}} {
			_, err := in.Workflows(ctx, admin.WorkflowQuery{Status: q.status, Cursor: q.cursor})
			if !errors.Is(err, runtime.ErrBadQuery) || !strings.Contains(err.Error(), q.field) {
				t.Fatalf("a bad %s: %v; want ErrBadQuery naming it", q.field, err)
			}
		}
		if _, err := in.Workflows(ctx, admin.WorkflowQuery{Status: "", Task: "", Cursor: "", Limit: 501}); !errors.Is(err, runtime.ErrBadQuery) {
			t.Fatalf("limit 501: %v", err)
		}
	})
}

// GET /api/v1/workflows answers a page as the admin layer lists it, with
// its filters and cursor; a bad filter is a 400 naming it.
func TestWorkflowAPI_ListIsAPageOfWorkflows(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	_, boom, _ := threeWorkflows(t, c)
	a := serveAPI(t, runtime.NewInspector(c, registerWF), runtime.APIOptions{})
	body := a.want(http.StatusOK, "GET", "/api/v1/workflows?status=failed", "")
	rows, _ := body["workflows"].([]any)
	if len(rows) != 1 || body["next"] != "" {
		t.Fatalf("GET ?status=failed = %v", body)
	}
	row := rows[0].(map[string]any)
	if row["id"] != boom || row["status"] != "failed" || row["task"] != "wf_double" || row["failed_step"] != "wf_explode" || row["created_at"] == nil {
		t.Fatalf("row %v", row)
	}
	if _, has := row["steps"]; has {
		t.Fatalf("a row holds its steps: %v", row)
	}
	first := a.want(http.StatusOK, "GET", "/api/v1/workflows?limit=2", "")
	if rows, _ := first["workflows"].([]any); len(rows) != 2 || first["next"] == "" {
		t.Fatalf("limit 2 = %v", first)
	}
	rest := a.want(http.StatusOK, "GET", "/api/v1/workflows?limit=2&cursor="+first["next"].(string), "")
	if rows, _ := rest["workflows"].([]any); len(rows) != 1 || rest["next"] != "" {
		t.Fatalf("the second page = %v", rest)
	}
	for q, field := range map[string]string{"status=dancing": "status", "cursor=nope": "cursor", "limit=0": "limit"} {
		if got := a.want(http.StatusBadRequest, "GET", "/api/v1/workflows?"+q, ""); got["field"] != field {
			t.Fatalf("?%s = %v; want a 400 naming %s", q, got, field)
		}
	}
}

// `app workflows` prints the workflows of the application's Redis, newest
// first, and --json the API's page; a bad status exits 2.
func TestCLI_WorkflowsListsThem(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := connect(t, a.env["REDIS_URL"], runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	var ids []string
	for _, body := range []string{"a b", "c d e"} {
		id, err := quickstart.CountWords.With(c).Step(quickstart.Text{Body: body}).Enqueue(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	out := a.ok("workflows")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("workflows = %q", out)
	}
	for i, want := range []string{ids[1], ids[0]} {
		row := strings.Fields(lines[1+i])
		if len(row) != 6 || row[0] != want || row[1] != "pending" || row[2] != "count_words" || row[4] != "-" {
			t.Fatalf("row %d = %q; want %s pending", i, lines[1+i], want)
		}
	}
	var page struct {
		Workflows []struct{ ID, Status string } `json:"workflows"`
		Next      string                        `json:"next"`
	}
	if err := json.Unmarshal([]byte(a.ok("workflows", "--limit", "1", "--json")), &page); err != nil || len(page.Workflows) != 1 || page.Workflows[0].ID != ids[1] || page.Next == "" {
		t.Fatalf("workflows --limit 1 --json = %+v, %v", page, err)
	}
	if code, _, errOut := a.run("workflows", "--status", "dancing"); code != 2 || !strings.Contains(errOut, "status") {
		t.Fatalf("a bad status: exit %d, %q", code, errOut)
	}
}

// On a cluster, where the list lives on another node than the records, the
// workflows are listed all the same.
func TestWorkflows_ListedOnACluster(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.SharedCluster(t).URL())
	ok1, boom, ok2 := threeWorkflows(t, c)
	page, err := runtime.NewInspector(c).Workflows(ctxT(t), admin.WorkflowQuery{})
	if err != nil || len(page.Workflows) != 3 {
		t.Fatalf("Workflows = %+v, %v", page, err)
	}
	if got := page.Workflows; got[0].ID != ok2 || got[1].ID != boom || got[1].FailedStep != "wf_explode" || got[2].ID != ok1 {
		t.Fatalf("rows %+v; want %s, %s (failed at wf_explode), %s", got, ok2, boom, ok1)
	}
}
