package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/access"
	"github.com/bananas-go/bananas/runtime/internal/api"
	"github.com/bananas-go/bananas/runtime/internal/openapi"
)

// The dashboard's action forms are the API's: every endpoint of the API's
// table with a Button is a form on the page of its target (actions), and
// the form's POST is answered by serving that endpoint (tableAction), so
// that an action is declared once, in the API's endpoint table. Only the
// bulk action over a page of the job list, which has no endpoint of its
// own, is the dashboard's.

// buttons are the API's actions that the dashboard shows, by page.
var buttons = func() map[openapi.Page][]api.Action {
	out := map[openapi.Page][]api.Action{}
	for _, a := range api.Actions() {
		out[a.Button.Page] = append(out[a.Button.Page], a)
	}
	return out
}()

// needs is the least role of each endpoint of the API's table, by its
// operation id: what a bulk action over jobs needs is the role of the
// endpoint that acts on one job.
var needs = func() map[string]access.Role {
	out := map[string]access.Role{}
	for _, e := range api.Endpoints() {
		out[e.ID] = e.Needs()
	}
	return out
}()

// wildcard finds the {names} of a path.
var wildcard = regexp.MustCompile(`\{([a-z_]+)\}`)

// formPath is the dashboard path of a's form: its Button's Path, or the
// endpoint's path without the API's prefix.
func formPath(a api.Action) string {
	if a.Button.Path != "" {
		return a.Button.Path
	}
	return strings.TrimPrefix(a.Path, "/api/v1")
}

// checkTable refuses, when the dashboard is made, a Button the dashboard
// could not serve: a form path of more than one target, or a {name} that
// is neither a path nor a query parameter of its endpoint, or a body other
// than its Fields.
func checkTable() {
	for _, a := range api.Actions() {
		names := wildcard.FindAllStringSubmatch(formPath(a), -1)
		if len(names) != 1 {
			panic(fmt.Sprintf("dashboard: the form of %s has %d targets in %s: want one", a.ID, len(names), formPath(a)))
		}
		if param(a.PathParams, names[0][1]) == nil && param(a.Query, names[0][1]) == nil {
			panic(fmt.Sprintf("dashboard: the form of %s names {%s}, which %s does not take", a.ID, names[0][1], a.Pattern()))
		}
		for _, p := range a.PathParams {
			if p.Name != names[0][1] {
				panic(fmt.Sprintf("dashboard: %s takes {%s}, which the form of %s does not give", a.Pattern(), p.Name, a.ID))
			}
		}
		if (a.Body != openapi.NoBody) != (len(a.Button.Fields) > 0) {
			panic(fmt.Sprintf("dashboard: the form of %s has fields: %d, for a body of kind %d", a.ID, len(a.Button.Fields), a.Body))
		}
	}
}

func param(ps []openapi.Param, name string) *openapi.Param {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}

// routeStates are the states of a route's row (openapi.RouteRow).
func routeStates(rt bananastype.Route) []string {
	s := []string{"running"}
	if rt.Paused {
		s[0] = "paused"
	}
	if rt.Dead > 0 {
		s = append(s, "dead")
	}
	return s
}

// form is one action form as the template draws it.
type form struct {
	Action, Key, ID string
	Label, Title    string
	Confirm, Danger bool
	CSRF, Back      string
	Class, Note     string
	Fields          []field
}

type field struct {
	openapi.Field
	Value string
}

// actions are the forms of page pg for its target (a job's id, a route, a
// cron entry's name) in the given states, for the template: those the
// session's role may take, none in read-only mode. A state is a string, or a []string of several. The
// page's Values fill the forms' fields by name.
func actions(p *page, pg string, target string, state ...any) []form {
	if p.ReadOnly {
		return nil
	}
	var states []string
	for _, s := range state {
		if many, ok := s.([]string); ok {
			states = append(states, many...)
		} else {
			states = append(states, fmt.Sprint(s))
		}
	}
	var out []form
	for _, a := range buttons[openapi.Page(pg)] {
		if !p.Who.Role.Allows(a.Needs()) {
			continue
		}
		b := a.Button
		if len(b.When) > 0 && !slices.ContainsFunc(b.When, func(s string) bool { return slices.Contains(states, s) }) {
			continue
		}
		f := form{Action: wildcard.ReplaceAllLiteralString(formPath(a), url.PathEscape(target)), Key: b.Key, ID: b.Key,
			Label: wildcard.ReplaceAllLiteralString(b.Label, target), Title: b.Title, Confirm: b.Confirm != "", Danger: b.Danger, CSRF: p.CSRF, Class: b.Class, Note: b.Note}
		if pg := openapi.Page(pg); pg == openapi.RouteRow || pg == openapi.CronRow || pg == openapi.ScheduleRow {
			f.ID += "-" + target
		}
		if b.Then == "" {
			f.Back = p.Self
		}
		for _, fd := range b.Fields {
			f.Fields = append(f.Fields, field{Field: fd, Value: p.Values[fd.Name]})
		}
		out = append(out, f)
	}
	return out
}

// tableAction answers the POST of a's form: it serves a's endpoint with the
// form's target as its path value or query parameter and the form's
// fields as its JSON body, and shows its answer as a flash.
func (d *Dashboard) tableAction(a api.Action) actionFunc {
	b := a.Button
	name := wildcard.FindStringSubmatch(formPath(a))[1]
	return func(r *http.Request) (string, url.Values, error) {
		target := r.PathValue(name)
		if err := mayNot(whoOf(r), a.Needs(), wildcard.ReplaceAllLiteralString(b.Label, target)); err != nil {
			admin.Denied(r.Context(), d.a, whoOf(r).Name, "dashboard", a.ID, target, err.Error())
			return "", nil, err
		}
		if b.Confirm != "" && r.PostFormValue("confirm") != "yes" {
			return "", nil, &problem{Status: http.StatusBadRequest, Msg: "tick the confirmation to " + b.Confirm}
		}
		req, err := endpointRequest(r, a, name, target)
		if err != nil {
			return "", nil, err
		}
		ans := &answer{header: http.Header{}}
		if err := a.Serve(admin.Audited(d.a, whoOf(r).Name, "dashboard"), ans, req); err != nil {
			return "", nil, err
		}
		done := url.Values{"done": {b.Done}}
		if b.Count != "" {
			var body map[string]json.RawMessage
			if json.Unmarshal(ans.body.Bytes(), &body) == nil {
				if n, err := strconv.Atoi(string(body[b.Count])); err == nil {
					done.Set("n", strconv.Itoa(n))
				}
			}
		}
		switch b.Then {
		case "":
			return pageOf(b.Page, target), done, nil
		case openapi.ThenLocation:
			if to, ok := strings.CutPrefix(ans.header.Get("Location"), "/api/v1"); ok {
				return to, done, nil
			}
			return pageOf(b.Page, target), done, nil
		}
		return b.Then, done, nil
	}
}

// endpointRequest is the request that serves a for the form of r: the
// target as the path value or query parameter name, the fields as a JSON
// object.
func endpointRequest(r *http.Request, a api.Action, name, target string) (*http.Request, error) {
	u := &url.URL{Path: a.Path}
	if param(a.PathParams, name) != nil {
		u.Path = strings.ReplaceAll(a.Path, "{"+name+"}", target)
	} else {
		u.RawQuery = url.Values{name: {target}}.Encode()
	}
	var body io.Reader = http.NoBody
	if len(a.Button.Fields) > 0 {
		obj := map[string]any{}
		for _, f := range a.Button.Fields {
			v := strings.TrimSpace(r.PostFormValue(f.Name))
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				obj[f.Name] = n
			} else if v != "" {
				obj[f.Name] = v
			} else {
				obj[f.Name] = nil // an empty field removes what it sets
			}
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.Context(), a.Method, u.String(), body)
	if err != nil {
		return nil, &problem{Status: http.StatusBadRequest, Msg: fmt.Sprintf("%s %q cannot be sent on: %v", name, target, err)}
	}
	req.URL = u // as built: the target's bytes stay as they are
	req.Header.Set("Content-Type", "application/json")
	for _, p := range a.PathParams {
		req.SetPathValue(p.Name, target)
	}
	return req, nil
}

// pageOf is the page of a form's target, where its action returns when the
// form did not say (its back field).
func pageOf(pg openapi.Page, target string) string {
	switch pg {
	case openapi.JobPage:
		return "/jobs/" + url.PathEscape(target)
	case openapi.WorkflowPage:
		return "/workflows/" + url.PathEscape(target)
	case openapi.LimitsPage:
		return "/routes/" + url.PathEscape(target) + "/limits"
	case openapi.DeadList:
		return "/jobs?" + url.Values{"route": {target}, "state": {"failed"}}.Encode()
	case openapi.CronRow:
		return "/cron"
	case openapi.ScheduleRow:
		return "/schedules"
	}
	return "/"
}

// answer keeps what an endpoint answers a form: its headers and body.
type answer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header         { return a.header }
func (a *answer) Write(b []byte) (int, error) { return a.body.Write(b) }
func (a *answer) WriteHeader(status int)      { a.status = status }
