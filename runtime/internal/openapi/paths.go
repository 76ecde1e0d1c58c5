package openapi

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// paths are the endpoints' operations, by path and method.
func (b *builder) paths(eps []Endpoint) (map[string]any, error) {
	paths := map[string]any{}
	for _, e := range eps {
		if err := checkPathParams(e); err != nil {
			return nil, err
		}
		item, _ := paths[e.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[e.Path] = item
		}
		method := strings.ToLower(e.Method)
		if _, ok := item[method]; ok {
			return nil, fmt.Errorf("openapi: %s declared twice", e.Pattern())
		}
		o, err := b.operation(e)
		if err != nil {
			return nil, err
		}
		item[method] = o
	}
	return paths, nil
}

var pathParam = regexp.MustCompile(`\{([^}]*)\}`)

// checkPathParams refuses an endpoint whose PathParams are not the {names}
// of its path, in order.
func checkPathParams(e Endpoint) error {
	var want, have []string
	for _, m := range pathParam.FindAllStringSubmatch(e.Path, -1) {
		want = append(want, m[1])
	}
	for _, p := range e.PathParams {
		have = append(have, p.Name)
	}
	if !slices.Equal(want, have) {
		return fmt.Errorf("openapi: %s: path parameters %q, but the path has %q", e.Pattern(), have, want)
	}
	return nil
}

// operation is endpoint e. Every operation that needs the token may answer
// 401 and 500, and an action 403.
func (b *builder) operation(e Endpoint) (map[string]any, error) {
	responses, err := b.responses(e)
	if err != nil {
		return nil, err
	}
	o := map[string]any{"operationId": e.ID, "tags": []any{e.Tag}, "summary": e.Summary, "responses": responses}
	var params []any
	for _, p := range e.PathParams {
		params = append(params, map[string]any{"name": p.Name, "in": "path", "required": true, "description": p.Desc, "schema": str()})
	}
	for _, p := range e.Query {
		if p.Prefix {
			// OpenAPI names parameters one by one: a family of names is said
			// in words (an object exploded in form style would take every
			// pair of the query as its key, and validators then misread the
			// other parameters).
			desc, _ := o["description"].(string)
			o["description"] = strings.TrimSpace(desc + " " + p.Desc)
			continue
		}
		params = append(params, map[string]any{"name": p.Name, "in": "query", "description": p.Desc, "schema": paramSchema(p)})
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if e.Public {
		o["security"] = []any{} // probes carry no token
	} else {
		// The least role of a token (API_TOKENS) that may call it: read,
		// operate or admin.
		o["x-bananas-role"] = string(e.Needs())
	}
	switch e.Body {
	case OneSubmission:
		o["requestBody"] = b.submissionBody()
	case Submissions:
		o["requestBody"] = batchBody(e.MaxBatch)
	case ShardCount:
		o["requestBody"] = shardsBody()
	case RouteLimits:
		o["requestBody"] = limitsBody()
	case WorkflowSteps:
		o["requestBody"] = b.workflowBody(e.MaxBatch)
	case ScheduleDef:
		o["requestBody"] = scheduleBody()
	case TimeRange:
		o["requestBody"] = rangeBody()
	case SignalPayload:
		o["requestBody"] = map[string]any{"required": true,
			"description": "The signal's payload: the JSON of the type the workflow's wait takes (runtime.WaitSignal[T]), checked against it when the program knows it.",
			"content":     jsonBody(map[string]any{})}
	}
	return o, nil
}

// errorResponse names the error answer of each status.
var errorResponse = map[int]string{
	http.StatusBadRequest: "BadRequest", http.StatusUnauthorized: "Unauthorized", http.StatusForbidden: "Forbidden",
	http.StatusNotFound: "NotFound", http.StatusConflict: "Conflict", http.StatusRequestEntityTooLarge: "TooLarge",
	http.StatusInternalServerError: "ServerError", http.StatusServiceUnavailable: "Unavailable",
}

func (b *builder) responses(e Endpoint) (map[string]any, error) {
	out := map[string]any{}
	if !e.Public {
		out["401"], out["500"], out["503"] = errRef("Unauthorized"), errRef("ServerError"), errRef("Unavailable")
		if e.Action {
			out["403"] = errRef("Forbidden")
		}
	}
	for _, r := range e.Responses {
		code := strconv.Itoa(r.Status)
		if r.Type == nil {
			name, ok := errorResponse[r.Status]
			if !ok {
				return nil, fmt.Errorf("openapi: %s: answer %d has no body type", e.Pattern(), r.Status)
			}
			out[code] = errRef(name)
			continue
		}
		schema, err := b.answer(r)
		if err != nil {
			return nil, err
		}
		resp := map[string]any{"description": r.Desc, "content": jsonBody(schema)}
		if r.Location {
			resp["headers"] = map[string]any{"Location": map[string]any{"description": "The URL of the job or workflow made.", "schema": str()}}
		}
		out[code] = resp
	}
	return out, nil
}

// answer is the schema of r's body.
func (b *builder) answer(r Response) (any, error) {
	t := typeOf(r.Type)
	var s any = map[string]any{"$ref": schemas + r.Name}
	switch {
	case r.Name == "Job" && b.typed:
		s = map[string]any{"$ref": schemas + "TypedJob"}
	case r.Name == "":
		b.g.answers = true
		defer func() { b.g.answers = false }()
		var err error
		if s, err = b.g.schema(t, t.String()); err != nil {
			return nil, err
		}
	}
	if r.List {
		return map[string]any{"type": "array", "items": s}, nil
	}
	return s, nil
}

func paramSchema(p Param) map[string]any {
	switch {
	case p.Kind == Duration:
		return map[string]any{"$ref": schemas + "Duration"}
	case p.Kind == Integer:
		return map[string]any{"type": "integer", "minimum": p.Min, "maximum": p.Max}
	case p.Kind == DateTime:
		return map[string]any{"type": "string", "format": "date-time"}
	case len(p.Enum) > 0 && p.NoDefault:
		return map[string]any{"type": "string", "enum": anys(p.Enum)}
	case len(p.Enum) > 0:
		return map[string]any{"type": "string", "enum": anys(p.Enum), "default": p.Enum[0]}
	}
	return str()
}

// submissionBody is the body of POST /api/v1/jobs, with an example per task.
func (b *builder) submissionBody() map[string]any {
	body := map[string]any{"schema": map[string]any{"$ref": schemas + "Submission"}}
	if len(b.mapping.examples) > 0 {
		body["examples"] = b.mapping.examples
	}
	return map[string]any{
		"required":    true,
		"description": "The task's wire name and its args, which must follow that task's schema exactly: keys as written (case matters), no others.",
		"content":     map[string]any{"application/json": body},
	}
}

// batchBody is the body of POST /api/v1/jobs/batch: up to most submissions.
func batchBody(most int) map[string]any {
	return map[string]any{
		"required":    true,
		"description": fmt.Sprintf("Up to %d submissions, each as POST /api/v1/jobs takes it. Every one is checked before any is enqueued.", most),
		"content": jsonBody(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"jobs"},
			"properties": map[string]any{
				"jobs": map[string]any{"type": "array", "minItems": 1, "maxItems": most, "items": map[string]any{"$ref": schemas + "Submission"}},
			},
		}),
	}
}

// shardsBody is the body of PUT /api/v1/routes/{route}/shards.
func shardsBody() map[string]any {
	return map[string]any{
		"required":    true,
		"description": "The route's shard count: 1 (not sharded) to 256.",
		"content": jsonBody(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"shards"},
			"properties": map[string]any{
				"shards": map[string]any{"type": "integer", "minimum": 1, "maximum": 256},
			},
		}),
	}
}

// scheduleBody is the body of PUT /api/v1/schedules/{id}. The args are
// checked against the task's own decoder (a refusal names the field).
func scheduleBody() map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return map[string]any{
		"required":    true,
		"description": "The schedule: a job of task name with args at each tick of cron.",
		"content": jsonBody(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"name", "cron"},
			"properties": map[string]any{
				"name":     str("The task's wire name."),
				"args":     map[string]any{"description": "The args of every tick's job, as the task's args type takes them."},
				"route":    str("The route of every tick's job (default: the task's)."),
				"priority": map[string]any{"type": "string", "enum": []any{"high", "normal", "low"}},
				"cron":     str("Five cron fields, six with a leading seconds field, or a descriptor such as @every 1s."),
				"tz":       str("The IANA time zone the spec is read in (default UTC)."),
				"jitter":   str("A Go duration: each tick fires up to this late."),
				"overlap":  map[string]any{"type": "string", "enum": []any{"skip", "buffer_one", "allow", "cancel_running"}},
				"catch_up": str("A Go duration: after an outage, the missed ticks this recent run, once each, oldest first."),
				"paused":   map[string]any{"type": "boolean"},
				"start":    map[string]any{"type": "string", "format": "date-time"},
				"end":      map[string]any{"type": "string", "format": "date-time"},
			},
		}),
	}
}

// rangeBody is the body of POST /api/v1/schedules/{id}/backfill.
func rangeBody() map[string]any {
	t := map[string]any{"type": "string", "format": "date-time"}
	return map[string]any{
		"required":    true,
		"description": "The range of ticks, both ends included.",
		"content": jsonBody(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"from", "to"},
			"properties":           map[string]any{"from": t, "to": t},
		}),
	}
}

func limitsBody() map[string]any {
	orNull := func(schema map[string]any) map[string]any {
		return map[string]any{"oneOf": []any{schema, map[string]any{"type": "null"}}}
	}
	return map[string]any{
		"required":    true,
		"description": "The route's own limits to change: a field left out stays as it is, null removes it.",
		"content": jsonBody(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"properties": map[string]any{
				"max_running": orNull(map[string]any{"type": "integer", "minimum": 1, "maximum": 1000000000}),
				"rate":        orNull(map[string]any{"type": "string", "pattern": "^[1-9][0-9]*/[smh]$"}),
				"burst":       orNull(map[string]any{"type": "integer", "minimum": 1, "maximum": 1000000000}),
			},
		}),
	}
}

// workflowBody is the body of POST /api/v1/workflows: up to most steps,
// each a job of a registered task.
func (b *builder) workflowBody(most int) map[string]any {
	name := str()
	if len(b.tasks) > 0 {
		name = map[string]any{"type": "string", "enum": anys(b.tasks)}
	}
	step := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"id"},
		"properties": map[string]any{
			"id":   map[string]any{"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$", "description": "The step's id, unique in the workflow."},
			"name": name,
			"signal": map[string]any{"type": "string", "pattern": "^[!-+--~]{1,200}$",
				"description": "Instead of name: the step waits for the signal of this name (POST /api/v1/workflows/{id}/signals/{name}), reached when the steps it comes after completed; a signal sent before is kept for it. Its payload is its result, read by the args type of the step after it."},
			"timeout": map[string]any{"type": "string", "description": "A signal wait's timeout, a Go duration (\"48h\"; none or \"0s\": for ever), counted from when it is reached: without a signal by then the workflow fails."},
			"sleep":   map[string]any{"type": "string", "description": "Instead of name: the step sleeps this long (a Go duration) after the one step it comes after, and passes its result on."},
			"args":    map[string]any{"description": "A first step's args, as its task's submission takes them (POST /api/v1/jobs): its task's schema exactly."},
			"after": map[string]any{"type": "array", "minItems": 1, "items": str(),
				"description": "The ids of the steps it comes after, each listed before it: it runs with the one's result, or with the list of several's results in this order, and takes their type (or a list of it)."},
		},
		"not":   map[string]any{"required": []any{"args", "after"}},
		"oneOf": []any{map[string]any{"required": []any{"name"}}, map[string]any{"required": []any{"signal"}}, map[string]any{"required": []any{"sleep"}}},
	}
	return map[string]any{
		"required":    true,
		"description": fmt.Sprintf("Up to %d steps, each a job of a registered task: a first step with its args, any other after the steps whose results it takes. The last step's result is the workflow's. Every step is checked, and stored, before any runs.", most),
		"content": jsonBody(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"steps"},
			"properties": map[string]any{
				"steps": map[string]any{"type": "array", "minItems": 1, "maxItems": most, "items": step},
			},
		}),
	}
}

// errorResponses are the error answers, each the Error shape.
func errorResponses() map[string]any {
	e := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": jsonBody(map[string]any{"$ref": schemas + "Error"})}
	}
	unauthorized := e("No bearer token, or a wrong one (the server has API_TOKEN set).")
	unauthorized["headers"] = map[string]any{"WWW-Authenticate": map[string]any{"schema": str()}}
	unavailable := e("Redis does not answer: error names its address and why. Send the request again after Retry-After seconds.")
	unavailable["headers"] = map[string]any{"Retry-After": map[string]any{"schema": map[string]any{"type": "integer"}}}
	return map[string]any{
		"BadRequest":   e("The request is wrong: field names the body key or query parameter."),
		"Unauthorized": unauthorized,
		"Forbidden":    e("The token's role may not call this (error names the role needed), or the API is read-only (API_READ_ONLY)."),
		"NotFound":     e("No such job, workflow, route or cron entry."),
		"Conflict":     e("The job is not in a state that allows this."),
		"TooLarge":     e("The body is over the server's limit."),
		"ServerError":  e("The server or Redis failed; the request may be sent again."),
		"Unavailable":  unavailable,
	}
}

func errRef(name string) map[string]any {
	return map[string]any{"$ref": "#/components/responses/" + name}
}

func jsonBody(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func str() map[string]any { return map[string]any{"type": "string"} }
