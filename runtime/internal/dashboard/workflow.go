package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/runtime/admin"
)

// workflowData is a workflow's page: the workflow, its result indented,
// and the actions that fit its status.
type workflowData struct {
	W                 *admin.Workflow
	Result            string // indented JSON; "" until it completed
	CanCancel         bool   // pending or running
	CanRetry          bool   // a step failed or was canceled
	Failed            *admin.WorkflowStep
	ErrorText, Detail string // the failed step's error: its first line, and the rest
}

// workflow is a workflow's page: its status, its steps with their jobs, and
// the Cancel and Retry buttons.
func (d *Dashboard) workflow(r *http.Request, p *page) (int, error) {
	w, err := d.a.Workflow(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, err
	}
	data := workflowData{W: w, Result: indentJSON(w.Result), CanCancel: w.Status == "pending" || w.Status == "running"}
	for i := range w.Steps {
		s := &w.Steps[i]
		if s.Status == "failed" || s.Status == "canceled" {
			data.CanRetry = true
		}
		if s.Status == "failed" && data.Failed == nil {
			data.Failed = s
			data.ErrorText, data.Detail, _ = strings.Cut(s.Error, "\n")
		}
	}
	p.Title, p.Nav, p.Current, p.Data = "Workflow "+w.ID, "workflow", "workflows", &data
	return http.StatusOK, nil
}

// workflows is the lookup of a workflow by id: the form, or with ?id= the
// workflow's page.
func (d *Dashboard) workflows(w http.ResponseWriter, r *http.Request) {
	if id := strings.TrimSpace(r.URL.Query().Get("id")); id != "" {
		http.Redirect(w, r, "/workflows/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	d.view(func(_ *http.Request, p *page) (int, error) {
		p.Title, p.Nav = "Workflows", "workflows"
		return http.StatusOK, nil
	}).ServeHTTP(w, r)
}

func (d *Dashboard) cancelWorkflow(r *http.Request) (string, url.Values, error) {
	id := r.PathValue("id")
	_, err := d.a.CancelWorkflow(r.Context(), id)
	return "/workflows/" + url.PathEscape(id), done("workflow-canceled"), err
}

func (d *Dashboard) retryWorkflow(r *http.Request) (string, url.Values, error) {
	id := r.PathValue("id")
	_, n, err := d.a.RetryWorkflow(r.Context(), id)
	return "/workflows/" + url.PathEscape(id), url.Values{"done": {"workflow-retried"}, "n": {strconv.Itoa(n)}}, err
}
