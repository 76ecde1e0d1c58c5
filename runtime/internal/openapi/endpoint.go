package openapi

import (
	"reflect"

	"github.com/bananas-go/bananas/runtime/internal/access"
)

// Endpoint is one operation of the HTTP API as the api package declares it:
// the api package serves its table of them (one mux route each), and
// Document describes the same table, so that a route is declared once.
type Endpoint struct {
	Method  string // GET, POST, PUT, DELETE
	Path    string // as the mux takes it: /api/v1/jobs/{id}
	ID, Tag string // the operationId and the tag
	Summary string
	// Action: the endpoint changes something, so read-only mode refuses it
	// (403).
	Action bool
	// Public: the endpoint needs no token (the probes).
	Public bool
	// Role is the least role of a token that may call an action
	// (access.Operate or access.Admin); see Needs.
	Role access.Role
	// Button, on an Action, is how the dashboard offers it: a form on the
	// page of its target that calls this endpoint. An action without one
	// is the API's and the CLI's only.
	Button *Button
	// PathParams describe the {names} of Path.
	PathParams []Param
	// Query are the query parameters the endpoint takes: it refuses any
	// other.
	Query []Param
	// Body is the request body the endpoint reads; MaxBatch, the most
	// submissions a Submissions body holds, or steps a WorkflowSteps body.
	Body     Body
	MaxBatch int
	// Responses are its answers. An answer of 400, 404, 409 or 413 without
	// a Type is the error shape; 401 and 500 (and 403 for an action) are
	// added to every endpoint that is not Public.
	Responses []Response
}

// Button is an action as the dashboard shows it: a form, on the page of its
// target, whose POST the dashboard answers by serving the endpoint with the
// form's values (its path's {names} from the page, its Fields as the body)
// and whose answer it shows as a flash. The dashboard's login, read-only
// mode and CSRF check stand before it, as before every form of its own.
type Button struct {
	// Page is where the form shows, and what its target is.
	Page Page
	// Key names the form's button (name=Key); the button's id is Key on a
	// page of one target, Key-<target> on a page of rows (a route, a cron
	// entry), and a confirmation box's Key-confirm.
	Key string
	// Label is the button's text, a {name} of Path in it the target's
	// value; Title its tooltip.
	Label, Title string
	// When are the target's states the form shows in (see Page); none:
	// always.
	When []string
	// Confirm, when set, puts a box to tick before the button, which the
	// dashboard checks too; its refusal says "tick the confirmation to
	// <Confirm>".
	Confirm string
	Danger  bool
	// Done keys the flash shown after the action, Flash is its text; a %s
	// in it is the whole number at the answer's JSON key Count.
	Done, Flash, Count string
	// Then is where the browser goes after: "" the page the form was on,
	// ThenLocation the dashboard page of the answer's Location, else this
	// path.
	Then string
	// Path is the form's dashboard path when it is not the endpoint's
	// without its /api/v1 prefix; each of its {names} is the endpoint's
	// path parameter of that name, or else its query parameter.
	Path string
	// Fields are the form's inputs, sent as the endpoint's JSON body: an
	// empty one as null, a whole number as a number, else as text. Note
	// is said under them, Class is the form's CSS class.
	Fields      []Field
	Note, Class string
}

// ThenLocation: after the action, the browser goes to the dashboard page
// of what the answer's Location names (the job a cron run made).
const ThenLocation = "location"

// Page is a dashboard page that holds action forms, and its target, whose
// path value and states a Button's Path and When are about.
type Page string

// The pages with action forms.
const (
	// JobPage is a job's page ({id}); its state is the job's status, none
	// for a job read from the history.
	JobPage Page = "job"
	// RouteRow is a route's row of the overview ({route}); its states are
	// "paused" or "running", and "dead" while it holds failed jobs.
	RouteRow Page = "route"
	// DeadList is the dead-letter listing of one route ({route}), while it
	// lists some.
	DeadList Page = "dead"
	// LimitsPage is a route's limits page ({route}).
	LimitsPage Page = "limits"
	// WorkflowPage is a workflow's page ({id}); its states are its status,
	// and "retryable" while a step failed or was canceled.
	WorkflowPage Page = "workflow"
	// CronRow is a cron entry's row of the cron page ({name}).
	CronRow Page = "cron"
	// ScheduleRow is a schedule's row of the schedules page ({id}); its
	// states are "data" or "code" (its source), and "paused" or "active".
	ScheduleRow Page = "schedule"
)

// Field is an input of a Button's form: its name is the key of the body.
type Field struct {
	Name, Label, Placeholder string
	// Numeric asks a phone for its number pad.
	Numeric bool
}

// Needs is the least role that may call the endpoint: none for a public
// one, read for one that is not an action, else its Role — admin when the
// table leaves it unsaid, so that an action added without a thought for
// roles is refused to all but admins.
func (e Endpoint) Needs() access.Role {
	switch {
	case e.Public:
		return ""
	case !e.Action:
		return access.Read
	case e.Role != "":
		return e.Role
	}
	return access.Admin
}

// Pattern is the endpoint's mux pattern: "GET /api/v1/jobs/{id}".
func (e Endpoint) Pattern() string { return e.Method + " " + e.Path }

// Param is a path or query parameter.
type Param struct {
	Name, Desc string
	Kind       ParamKind
	// Enum, when set, are the values it takes, the first being the default
	// unless NoDefault: a filter whose absence means any value.
	Enum      []string
	NoDefault bool
	// Min and Max bound an Integer.
	Min, Max int
	// Prefix: Name is a prefix such as "args.", and the endpoint takes any
	// query parameter named by it and more ("args.customer.id"), each a
	// text value. OpenAPI declares parameters by their names, so the
	// document says this in the operation's description (Desc), and a
	// strict validator of the document refuses such a parameter: the
	// document is narrower than the server there.
	Prefix bool
}

// ParamKind is the type of a parameter's value.
type ParamKind int

const (
	// String is any text.
	String ParamKind = iota
	// Integer is a whole number from Min to Max.
	Integer
	// Duration is a Go duration (time.ParseDuration): "30s".
	Duration
	// DateTime is an RFC 3339 time: "2026-11-26T22:00:00Z".
	DateTime
)

// Body is the request body of an endpoint.
type Body int

const (
	// NoBody: the endpoint reads no body.
	NoBody Body = iota
	// OneSubmission is a Submission: a registered task's name and its args.
	OneSubmission
	// Submissions is {"jobs": [Submission, …]}, up to the endpoint's
	// MaxBatch of them.
	Submissions
	// ShardCount is {"shards": N}, a route's shard count.
	ShardCount
	// RouteLimits is {"max_running": N|null, "rate": "N/s"|null,
	// "burst": M|null}: a change of a route's limits.
	RouteLimits
	// WorkflowSteps is {"steps": [{"id", "name", "args"} or {"id", "name",
	// "after": [id, …]}, …]}, up to the endpoint's MaxBatch steps.
	WorkflowSteps
	// ScheduleDef is a schedule made at run time: {"name", "args", "cron",
	// "tz", "jitter", "overlap", "catch_up", "paused", "start", "end",
	// "route", "priority"}.
	ScheduleDef
	// TimeRange is {"from", "to"}: RFC 3339 times, both required.
	TimeRange
	// SignalPayload is a workflow signal's payload: any JSON value, read
	// by the type of the wait it is for.
	SignalPayload
)

// Response is one answer of an endpoint.
type Response struct {
	Status int
	Desc   string
	// Type is a value of the Go type written as the body (one with a
	// WireType method is described by the type WireType returns: what its
	// MarshalJSON writes); nil is the error shape for a status of 400 and
	// above.
	Type any
	// List: the body is a JSON array of Type.
	List bool
	// Name is the component name of Type's schema. A Name given twice to
	// one type makes the second an alias of the first. The Name Job marks
	// the job shape: with its task, args and result keys, such an answer is
	// typed by the job's task (TypedJob).
	Name string
	// Inner names the components of types Type holds, by the JSON key of
	// Type that holds them (its element, for a list or a pointer).
	Inner map[string]string
	// Location: the answer has a Location header, the URL of the job or
	// workflow made.
	Location bool
}

// typeOf is the Go type whose JSON shape v writes.
func typeOf(v any) reflect.Type {
	if w, ok := v.(interface{ WireType() any }); ok {
		return reflect.TypeOf(w.WireType())
	}
	return reflect.TypeOf(v)
}
