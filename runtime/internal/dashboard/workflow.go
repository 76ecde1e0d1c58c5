package dashboard

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// workflowData is a workflow's page: the workflow, its result indented,
// and the actions that fit its status.
type workflowData struct {
	W      *bananastype.Workflow
	Result string // indented JSON; "" until it completed
	// States are what its action forms go by: its status, and retryable
	// while a step failed or was canceled.
	States            []string
	Failed            *bananastype.WorkflowStep
	ErrorText, Detail string // the failed step's error: its first line, and the rest
	// Waits are its timers and signal waits.
	Waits []bananastype.WorkflowStep
}

// workflow is a workflow's page: its status, its steps with their jobs, and
// the Cancel and Retry buttons.
func (d *Dashboard) workflow(r *http.Request, p *page) (int, error) {
	w, err := d.a.Workflow(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, err
	}
	data := workflowData{W: w, Result: indentJSON(w.Result), States: []string{w.Status}}
	for i := range w.Steps {
		s := &w.Steps[i]
		if s.Wait != nil {
			data.Waits = append(data.Waits, *s)
		}
		if (s.Status == "failed" || s.Status == "canceled") && !slices.Contains(data.States, "retryable") {
			data.States = append(data.States, "retryable")
		}
		if s.Status == "failed" && data.Failed == nil {
			data.Failed = s
			data.ErrorText, data.Detail, _ = strings.Cut(s.Error, "\n")
		}
	}
	p.Title, p.Nav, p.Current, p.Data = "Workflow "+w.ID, "workflow", "workflows", &data
	return http.StatusOK, nil
}

// workflowsData is the list of workflows: its filters as typed, so that
// the form keeps them, and a page of the list.
type workflowsData struct {
	Q        admin.WorkflowQuery
	Statuses []string
	Tasks    []string
	Page     bananastype.WorkflowPage
	Next     string // link to the next page; "" at the end
	Bad      string // why the filter was refused
}

// workflows is the list of workflows, newest first, filtered by the form's
// values (a GET: the link is the list), with the lookup of one by id: with
// ?id= the workflow's page.
func (d *Dashboard) workflows(w http.ResponseWriter, r *http.Request) {
	if id := strings.TrimSpace(r.URL.Query().Get("id")); id != "" {
		http.Redirect(w, r, "/workflows/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	d.view(d.workflowList).ServeHTTP(w, r)
}

func (d *Dashboard) workflowList(r *http.Request, p *page) (int, error) {
	v := r.URL.Query()
	data := workflowsData{Statuses: bananastype.WorkflowStatuses,
		Q: admin.WorkflowQuery{Status: v.Get("status"), Task: strings.TrimSpace(v.Get("task")), Cursor: v.Get("cursor")}}
	p.Title, p.Nav, p.Data = "Workflows", "workflows", &data
	for _, t := range d.a.Tasks() {
		data.Tasks = append(data.Tasks, t.Name)
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			data.Bad = "limit " + strconv.Quote(l) + ": want a number from 1 to 500"
			return http.StatusBadRequest, nil
		}
		data.Q.Limit = n
	}
	var err error
	if data.Page, err = d.a.Workflows(r.Context(), data.Q); err != nil {
		if status, msg := statusOf(err); status == http.StatusBadRequest {
			data.Bad = msg // a bad filter keeps the form, so it can be fixed in place
			return http.StatusBadRequest, nil
		}
		return 0, err
	}
	data.Next = nextPage("/workflows", v, data.Page.Next)
	return http.StatusOK, nil
}
