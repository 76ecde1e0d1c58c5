package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Workflows lists the fake's workflows, ids descending, without their
// steps: of the status asked, and a bad status refused as the admin layer
// refuses it.
func (f *fakeAdmin) Workflows(_ context.Context, q admin.WorkflowQuery) (bananastype.WorkflowPage, error) {
	if q.Status != "" && !slices.Contains(bananastype.WorkflowStatuses, q.Status) {
		return bananastype.WorkflowPage{}, admin.BadQuery("status", "status %q: use pending, running, completed, failed or canceled", q.Status)
	}
	var page bananastype.WorkflowPage
	for _, w := range f.workflows {
		if q.Status == "" || w.Status == q.Status {
			row := *w
			row.Steps = nil
			page.Workflows = append(page.Workflows, row)
		}
	}
	slices.SortFunc(page.Workflows, func(a, b bananastype.Workflow) int { return strings.Compare(b.ID, a.ID) })
	return page, nil
}

func failedWorkflow() *bananastype.Workflow {
	return &bananastype.Workflow{ID: "W1", Status: "failed", Steps: []bananastype.WorkflowStep{
		{Label: "split", Name: "wf_split", JobID: "J1.default", Status: "completed"},
		{Label: "boom", Name: "wf_explode", JobID: "J2.default", Status: "failed", After: []string{"split"}, Error: "explode <broke>\nat main.go:3"},
		{Label: "last", Name: "wf_double", JobID: "J3.default", Status: "canceled", After: []string{"boom"}, Error: "canceled with its workflow"},
	}}
}

// A workflow's page shows its status, each step with its job linked, and
// the failed step's error (escaped); Retry fits a failed workflow, Cancel
// does not; its POST retries and comes back with what it did.
func TestWorkflowPage_ShowsTheStepsAndTheFailedStepsErrorAndRetries(t *testing.T) {
	f := &fakeAdmin{workflows: map[string]*bananastype.Workflow{"W1": failedWorkflow()}}
	srv, c := server(t, f)
	status, body := get(t, c, srv.URL+"/workflows/W1")
	if status != http.StatusOK {
		t.Fatalf("GET /workflows/W1 = %d:\n%s", status, body)
	}
	for _, want := range []string{
		`id="status">failed<`, `<a href="/jobs/J2.default">J2.default</a>`, `<pre class="error" id="error">explode &lt;broke&gt;</pre>`,
		`id="step-last"`, `data-label="After">split</td>`, `id="retry"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the workflow page lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, `id="cancel"`) {
		t.Errorf("a failed workflow offers Cancel")
	}
	m := csrfInput.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the page")
	}
	resp, err := c.PostForm(srv.URL+"/workflows/W1/retry", url.Values{"csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/workflows/W1?") || fmt.Sprint(f.wfActed) != "[retry W1]" {
		t.Fatalf("POST retry = %d to %q, acted %v", resp.StatusCode, loc, f.wfActed)
	}
	if _, page := get(t, c, srv.URL+resp.Header.Get("Location")); !strings.Contains(page, "Retried: the failed and canceled steps run again") {
		t.Fatalf("the page after the retry does not say it:\n%s", page)
	}
}

// An unknown workflow is a 404 page; the lookup form sends an id to its
// page.
func TestWorkflowPage_UnknownIs404AndTheLookupOpensOne(t *testing.T) {
	srv, c := server(t, &fakeAdmin{})
	if status, body := get(t, c, srv.URL+"/workflows/W9"); status != http.StatusNotFound || !strings.Contains(body, "workflow not found: W9") {
		t.Fatalf("GET /workflows/W9 = %d:\n%s", status, body)
	}
	if status, body := get(t, c, srv.URL+"/workflows"); status != http.StatusOK || !strings.Contains(body, `id="workflow-lookup"`) {
		t.Fatalf("GET /workflows = %d:\n%s", status, body)
	}
	resp, err := c.Get(srv.URL + "/workflows?id=" + url.QueryEscape(" W 1/x "))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/workflows/W%201%2Fx" {
		t.Fatalf("lookup = %d to %q", resp.StatusCode, loc)
	}
}

// The list's rows link to each workflow's page, and show its failed step;
// a status the admin layer refuses is a 400 page that keeps the form and
// says why; HTML in a field is escaped.
func TestWorkflowsPage_RowsLinkToTheirPagesAndABadStatusKeepsTheForm(t *testing.T) {
	w := failedWorkflow()
	w.FailedStep, w.Task = "boom", "wf_<double>"
	srv, c := server(t, &fakeAdmin{workflows: map[string]*bananastype.Workflow{"W1": w, "W/2": {ID: "W/2", Status: "running", Task: "t"}}})
	status, body := get(t, c, srv.URL+"/workflows")
	if status != http.StatusOK || !strings.Contains(body, `href="/workflows/W1"`) || !strings.Contains(body, `href="/workflows/W%2F2"`) ||
		!strings.Contains(body, "<code>boom</code>") || !strings.Contains(body, "wf_&lt;double&gt;") {
		t.Fatalf("GET /workflows = %d:\n%s", status, body)
	}
	status, body = get(t, c, srv.URL+"/workflows?status=dancing")
	if status != http.StatusBadRequest || !strings.Contains(body, `id="bad"`) || !strings.Contains(body, "status") || !strings.Contains(body, `id="workflow-filters"`) {
		t.Fatalf("GET /workflows?status=dancing = %d:\n%s", status, body)
	}
}
