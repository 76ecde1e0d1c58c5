package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/bananas-go/bananas/runtime/admin"
)

// workflowSubmitted is the answer to a workflow's submission: its id and
// each step's job id by the step's id.
type workflowSubmitted struct {
	ID    string            `json:"id"`
	Steps map[string]string `json:"steps"`
}

// workflowStepKeys are the keys a step of a submitted workflow takes.
var workflowStepKeys = map[string]bool{"id": true, "name": true, "args": true, "after": true, "signal": true, "timeout": true, "sleep": true}

// submitWorkflow serves POST /api/v1/workflows: the body {"steps": [...]}
// is read here, its keys matched exactly; the admin layer checks what the
// steps mean (their tasks, args, order and types).
func (s *server) submitWorkflow(w http.ResponseWriter, r *http.Request) error {
	sub, err := workflowBody(r)
	if err != nil {
		return err
	}
	id, jobs, err := s.a.SubmitWorkflow(r.Context(), sub)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/workflows/"+url.PathEscape(id))
	return writeJSON(w, http.StatusCreated, workflowSubmitted{ID: id, Steps: jobs})
}

// workflowBody reads {"steps": [step, …]}, each step {"id", "name",
// "args"} or {"id", "name", "after": [id, …]}.
func workflowBody(r *http.Request) (admin.WorkflowSubmission, error) {
	var sub admin.WorkflowSubmission
	var raw json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&raw); err != nil {
		return sub, workflowBodyError(err)
	}
	if dec.More() {
		return sub, BadRequest("", "the body holds more than one JSON value")
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(raw, &body) != nil || body == nil {
		return sub, BadRequest("", `the body is JSON %s: want {"steps": [step, …]}`, clip(raw))
	}
	for k := range body {
		if k != "steps" {
			return sub, BadRequest(k, `unknown field %q (want steps: {"steps": [step, …]})`, k)
		}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body["steps"], &items); err != nil || items == nil {
		return sub, BadRequest("steps", `steps: want an array of steps, each {"id", "name", "args"} or {"id", "name", "after"}`)
	}
	switch {
	case len(items) == 0:
		return sub, BadRequest("steps", "steps: empty: a workflow has 1 to %d steps, the last one's result being the workflow's", admin.MaxWorkflowSteps)
	case len(items) > admin.MaxWorkflowSteps:
		return sub, BadRequest("steps", "steps: %d steps, over the limit of %d", len(items), admin.MaxWorkflowSteps)
	}
	sub.Steps = make([]admin.WorkflowStepSubmission, len(items))
	for i, item := range items {
		st, err := workflowStep(fmt.Sprintf("steps[%d]", i), item)
		if err != nil {
			return sub, err
		}
		sub.Steps[i] = st
	}
	return sub, nil
}

// workflowStep reads step at of a workflow's body.
func workflowStep(at string, raw json.RawMessage) (admin.WorkflowStepSubmission, error) {
	var st admin.WorkflowStepSubmission
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return st, BadRequest(at, `%s: want a step {"id": …, "name": …, "args": …} or {"id": …, "name": …, "after": […]}, got %s`, at, clip(raw))
	}
	for k := range fields {
		if !workflowStepKeys[k] {
			return st, BadRequest(at+"."+k, "%s: unknown field %q (want id, name, args, after, signal, timeout or sleep)", at, k)
		}
	}
	// A wait (a signal's, or a sleep) is a step without a task: its name
	// may be left out. Whether the fields fit together is the admin
	// layer's to say.
	_, signal := fields["signal"]
	_, sleep := fields["sleep"]
	strs := []struct {
		key      string
		dst      *string
		optional bool
	}{{"id", &st.ID, false}, {"name", &st.Name, signal || sleep}, {"signal", &st.Signal, true}, {"timeout", &st.Timeout, true}, {"sleep", &st.Sleep, true}}
	for _, f := range strs {
		raw, given := fields[f.key]
		if !given && f.optional {
			continue
		}
		v, ok := jsonString(raw)
		if !ok {
			return st, BadRequest(at+"."+f.key, "%s.%s: want a string, got %s", at, f.key, orMissing(raw))
		}
		*f.dst = v
	}
	st.Args = fields["args"]
	if after, ok := fields["after"]; ok {
		if err := json.Unmarshal(after, &st.After); err != nil || st.After == nil {
			return st, BadRequest(at+".after", "%s.after: want an array of the ids of steps listed before it, got %s", at, clip(after))
		}
	}
	return st, nil
}

func orMissing(raw json.RawMessage) string {
	if raw == nil {
		return "nothing"
	}
	return clip(raw)
}

// workflowBodyError names what is wrong with the body of a workflow.
func workflowBodyError(err error) error {
	e := bodyError(err)
	if be, ok := e.(*Error); ok && be.Status == http.StatusBadRequest {
		be.Field = ""
		if be.Msg == "empty body: want a JSON object" {
			be.Msg = `empty body: want {"steps": [step, …]}`
		}
	}
	return e
}

func (s *server) workflow(w http.ResponseWriter, r *http.Request) error {
	return answer(w, http.StatusOK)(s.a.Workflow(r.Context(), r.PathValue("id")))
}

func (s *server) cancelWorkflow(w http.ResponseWriter, r *http.Request) error {
	return answer(w, http.StatusOK)(s.a.CancelWorkflow(r.Context(), r.PathValue("id")))
}

func (s *server) retryWorkflow(w http.ResponseWriter, r *http.Request) error {
	wf, _, err := s.a.RetryWorkflow(r.Context(), r.PathValue("id"))
	return answer(w, http.StatusOK)(wf, err)
}

// signalSent is the answer to a signal: the workflow and the signal's name.
type signalSent struct {
	Workflow string `json:"workflow"`
	Signal   string `json:"signal"`
}

// signalWorkflow serves POST /api/v1/workflows/{id}/signals/{name}: the
// body, one JSON value, is the signal's payload; the admin layer reads it
// by the wait's type.
func (s *server) signalWorkflow(w http.ResponseWriter, r *http.Request) error {
	var raw json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&raw); err != nil {
		return bodyError(err)
	}
	if dec.More() {
		return BadRequest("", "the body holds more than one JSON value")
	}
	id, name := r.PathValue("id"), r.PathValue("name")
	if err := s.a.SignalWorkflow(r.Context(), id, name, raw); err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, signalSent{Workflow: id, Signal: name})
}

// workflows serves GET /api/v1/workflows: a page of the list of workflows;
// the admin layer checks what the values mean.
func (s *server) workflows(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	q := admin.WorkflowQuery{Status: v.Get("status"), Task: v.Get("task"), Cursor: v.Get("cursor")}
	if err := limitParam(v, &q.Limit); err != nil {
		return err
	}
	return answer(w, http.StatusOK)(s.a.Workflows(r.Context(), q))
}
