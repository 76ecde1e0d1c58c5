package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// Task is one registered task as the document shows it.
type Task struct {
	Name     string // wire name, the "name" of a submission
	Route    string // default route
	Priority string // default priority: high, normal or low
	Doc      string // the annotated function's doc comment; may be ""
	// Args is the Go type of the args (a struct, usually).
	Args reflect.Type
	// Result is the Go type of the result; nil when the task has none.
	Result reflect.Type
}

// Options are what the document says besides the tasks.
type Options struct {
	Title, Version string // of the info object; "Bananas" and "0" when empty
	Description    string // of the info object; may be ""

	// Endpoints are the operations of the API (api.Endpoints): their
	// parameters, bodies and answers, whose Go types are components of the
	// document under the names the endpoints give them. The server writes
	// the answers, so their keys that encoding/json always writes (no
	// omitempty or omitzero) are required.
	Endpoints []Endpoint

	// Custom are the schemas of types that encode themselves (MarshalJSON),
	// whose JSON reflection cannot see: a time that is null when zero, say.
	Custom map[reflect.Type]map[string]any
}

const schemas = "#/components/schemas/"

// ownComponents are the components the document defines whatever the
// endpoints and tasks.
var ownComponents = []string{"Submission", "TypedJob", "OtherJob", "Priority", "Duration", "Error"}

// builder holds the document's components while Document builds it.
type builder struct {
	g       *generator
	comps   map[string]any
	taken   map[string]bool         // component names in use
	fixed   map[reflect.Type]string // types named by an endpoint
	typed   bool                    // the Job answer is typed by its task (TypedJob)
	job     reflect.Type            // the type of the Job answer; nil when none
	tasks   []string                // the tasks' names, sorted
	subs    []any                   // a $ref to each task's submission
	jobs    []any                   // a $ref to each task's typed job
	mapping struct{ sub, job, examples map[string]any }
}

// Document returns the OpenAPI 3.1.0 document of the HTTP API serving tasks,
// as JSON. The same tasks and options give the same bytes: tasks are sorted
// by name, and every object's keys are written in order.
func Document(tasks []Task, o Options) ([]byte, error) {
	tasks, err := sortedTasks(tasks)
	if err != nil {
		return nil, err
	}
	b := &builder{g: newGenerator(o.Custom), comps: map[string]any{}, taken: map[string]bool{}, fixed: map[reflect.Type]string{}}
	b.mapping.sub, b.mapping.job, b.mapping.examples = map[string]any{}, map[string]any{}, map[string]any{}
	for _, n := range ownComponents {
		b.taken[n] = true
	}
	// The answers first: their names are the endpoints', and the keys
	// always written are required.
	b.g.answers = true
	if err := b.answers(o.Endpoints); err != nil {
		return nil, err
	}
	b.g.answers = false
	b.typed = b.job != nil && jobHasTaskArgsResult(b.job)
	for _, t := range tasks {
		if err := b.task(t); err != nil {
			return nil, err
		}
	}
	paths, err := b.paths(o.Endpoints)
	if err != nil {
		return nil, err
	}
	names := b.g.name(b.taken, b.fixed)
	for t, d := range b.g.defs {
		b.comps[names[t]] = d
	}
	b.ownComponents()
	out := resolver{names: names, prefix: schemas}.resolve(b.document(o, paths))
	doc, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return append(doc, '\n'), nil
}

// sortedTasks is tasks sorted by name, each with a name of its own and args.
func sortedTasks(tasks []Task) ([]Task, error) {
	tasks = slices.Clone(tasks)
	slices.SortFunc(tasks, func(a, b Task) int { return strings.Compare(a.Name, b.Name) })
	for i, t := range tasks {
		if t.Name == "" {
			return nil, errors.New("openapi: a task without a name")
		}
		if i > 0 && tasks[i-1].Name == t.Name {
			return nil, fmt.Errorf("openapi: two tasks named %q", t.Name)
		}
		if t.Args == nil {
			return nil, fmt.Errorf("openapi: task %q: no args type", t.Name)
		}
	}
	return tasks, nil
}

// answers reaches the type of every answer of the endpoints, and names the
// components the endpoints name.
func (b *builder) answers(eps []Endpoint) error {
	for _, e := range eps {
		for _, r := range e.Responses {
			if r.Type == nil {
				continue
			}
			t := typeOf(r.Type)
			s, err := b.g.schema(t, fmt.Sprintf("%s %s: %d", e.Method, e.Path, r.Status))
			if err != nil {
				return err
			}
			if r.Name == "Job" {
				b.job = t
			}
			if err := b.nameAnswer(t, s, r.Name); err != nil {
				return err
			}
			for key, name := range r.Inner {
				inner := innerType(t, key)
				if inner == nil {
					return fmt.Errorf("openapi: %s %s: %s has no key %q holding a struct to name %s", e.Method, e.Path, t, key, name)
				}
				if err := b.nameAnswer(inner, ref{inner}, name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// nameAnswer names the component of t, whose schema is s: name, unless t
// has a name already, of which name is then an alias.
func (b *builder) nameAnswer(t reflect.Type, s any, name string) error {
	if name == "" {
		return nil
	}
	if componentName(name) != name {
		return fmt.Errorf("openapi: answer %q: a component name is PascalCase, letters and digits only, without a JSON suffix (such as %q)", name, componentName(name))
	}
	if slices.Contains(ownComponents, name) {
		return fmt.Errorf("openapi: answer %q: the document names a component of its own so", name)
	}
	if _, isRef := s.(ref); !isRef {
		return fmt.Errorf("openapi: answer %q: %s is not a named struct type", name, t)
	}
	switch have, ok := b.fixed[t]; {
	case !ok:
		if b.taken[name] {
			return fmt.Errorf("openapi: answer %q: two types of that name", name)
		}
		b.fixed[t], b.taken[name] = name, true
	case have != name && !b.taken[name]:
		b.comps[name], b.taken[name] = s, true
	}
	return nil
}

// innerType is the struct type that key of struct t holds (the element of a
// list or the target of a pointer), or nil.
func innerType(t reflect.Type, key string) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for _, f := range jsonFields(t) {
		if f.name != key {
			continue
		}
		ft := f.typ
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.Name() != "" {
			return ft
		}
	}
	return nil
}

// task adds the components of task t: its submission, its result and its
// typed job.
func (b *builder) task(t Task) error {
	args, err := b.g.schema(t.Args, fmt.Sprintf("task %s: args %s", t.Name, t.Args))
	if err != nil {
		return err
	}
	var result any = map[string]any{"type": "null", "description": "The task has no result."}
	if t.Result != nil {
		if result, err = b.g.schema(t.Result, fmt.Sprintf("task %s: result %s", t.Name, t.Result)); err != nil {
			return err
		}
	}
	base := camel(t.Name)
	sub := claim(b.taken, base+"Submission")
	res := claim(b.taken, base+"Result")
	b.comps[res] = describe(result, fmt.Sprintf("The result of task %s.", t.Name))
	b.comps[sub] = submission(t, args)
	b.subs = append(b.subs, map[string]any{"$ref": schemas + sub})
	b.mapping.sub[t.Name] = schemas + sub
	b.tasks = append(b.tasks, t.Name)
	if v, err := example(t.Args); err == nil {
		b.mapping.examples[t.Name] = map[string]any{"summary": "A job of task " + t.Name, "value": map[string]any{"name": t.Name, "args": v}}
	}
	if !b.typed {
		return nil
	}
	job := claim(b.taken, base+"Job")
	b.comps[job] = map[string]any{
		"description": fmt.Sprintf("A job of task %s: its args and result typed.", t.Name),
		"allOf": []any{
			map[string]any{"$ref": schemas + "Job"},
			map[string]any{"properties": map[string]any{
				"task":   map[string]any{"const": t.Name},
				"args":   orNull(clone(args), "null when the args could not be decoded"),
				"result": orNull(map[string]any{"$ref": schemas + res}, "null until the job completes"),
			}},
		},
	}
	b.jobs = append(b.jobs, map[string]any{"$ref": schemas + job})
	b.mapping.job[t.Name] = schemas + job
	return nil
}

// ownComponents adds the components the document defines itself.
func (b *builder) ownComponents() {
	b.comps["Error"] = errorSchema
	b.comps["Priority"] = map[string]any{"type": "string", "enum": []any{"high", "normal", "low"}}
	b.comps["Duration"] = map[string]any{
		"type":        "string",
		"pattern":     durationPattern,
		"description": `A Go duration (time.ParseDuration): a number and a unit (ns, us, ms, s, m, h), repeated, such as "10s" or "1h30m".`,
		"examples":    []any{"10s", "1h30m"},
	}
	b.comps["Submission"] = map[string]any{"description": "No task is registered: nothing can be submitted.", "not": map[string]any{}}
	if len(b.subs) > 0 {
		b.comps["Submission"] = map[string]any{
			"description":   "A job to enqueue: the name of a registered task and its args, which follow that task's schema.",
			"oneOf":         b.subs,
			"discriminator": map[string]any{"propertyName": "name", "mapping": b.mapping.sub},
		}
	}
	switch {
	case !b.typed:
	case len(b.tasks) == 0:
		b.comps["TypedJob"] = map[string]any{"$ref": schemas + "Job"}
	default:
		b.comps["OtherJob"] = map[string]any{
			"description": "A job of a task this server does not know (another program's): its args and result are null.",
			"allOf": []any{
				map[string]any{"$ref": schemas + "Job"},
				map[string]any{"properties": map[string]any{"task": map[string]any{"not": map[string]any{"enum": anys(b.tasks)}}}},
			},
		}
		b.comps["TypedJob"] = map[string]any{
			"description":   "A job, as the variant of its task: the task key tells which (see the discriminator), and that variant's args and result are the task's own schemas (<Task>Submission's args, <Task>Result).",
			"oneOf":         append(b.jobs, map[string]any{"$ref": schemas + "OtherJob"}),
			"discriminator": map[string]any{"propertyName": "task", "mapping": b.mapping.job},
		}
	}
}

// errorSchema is the body of every error answer.
var errorSchema = map[string]any{
	"type":     "object",
	"required": []any{"error"},
	"properties": map[string]any{
		"error": map[string]any{"type": "string", "description": "What is wrong, for people."},
		"field": map[string]any{"type": "string", "description": "The body key or query parameter the error is about, when there is one."},
		"role":  map[string]any{"type": "string", "enum": []any{"read", "operate", "admin"}, "description": "On a 403 for a token whose role may not call the endpoint: the least role that may."},
	},
}

// document is the whole document around paths and the components.
func (b *builder) document(o Options, paths map[string]any) map[string]any {
	var tags []any
	seen := map[string]bool{}
	for _, e := range o.Endpoints {
		if e.Tag != "" && !seen[e.Tag] {
			seen[e.Tag] = true
			tags = append(tags, map[string]any{"name": e.Tag})
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   nonEmpty(o.Title, "Bananas"),
			"version": nonEmpty(o.Version, "0"),
			"description": nonEmpty(o.Description,
				"The HTTP API of a Bananas deployment: submit typed jobs, read their state and results, and operate queues, the dead-letter queue, cron and workers."),
		},
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"security":          []any{map[string]any{"bearer": []any{}}},
		"paths":             paths,
		"components": map[string]any{
			"schemas":   b.comps,
			"responses": errorResponses(),
			"securitySchemes": map[string]any{"bearer": map[string]any{
				"type": "http", "scheme": "bearer",
				"description": "A token of the server's API_TOKENS (each with a role: read, operate or admin), or its API_TOKEN (admin). A server started with neither asks for none (and listens on loopback only).",
			}},
		},
	}
	if len(tags) > 0 {
		doc["tags"] = tags
	}
	return doc
}

func anys(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// submission is the variant of POST /api/v1/jobs for task t.
func submission(t Task, args any) map[string]any {
	desc := fmt.Sprintf("Enqueue a job of task %s (default route %q, priority %q).", t.Name, t.Route, t.Priority)
	if d := strings.TrimSpace(t.Doc); d != "" {
		desc += "\n\n" + d
	}
	route := map[string]any{"type": "string", "description": "The route (queue) to enqueue on, instead of the task's default."}
	if t.Route != "" {
		route["default"] = t.Route
	}
	priority := map[string]any{"$ref": schemas + "Priority", "description": "The priority, instead of the task's default."}
	if t.Priority != "" {
		priority["default"] = t.Priority
	}
	return map[string]any{
		"type":                 "object",
		"description":          desc,
		"required":             []any{"name", "args"},
		"additionalProperties": false,
		"properties": map[string]any{
			"name":     map[string]any{"type": "string", "const": t.Name},
			"args":     args,
			"route":    route,
			"priority": priority,
			"delay": map[string]any{"$ref": schemas + "Duration",
				"description": `How long to wait before the job is due: a Go duration such as "10s".`},
			"unique": map[string]any{"$ref": schemas + "Duration",
				"description": `A unique key for the job, held this long at most: while it is held, a submission of the same key is a 409 naming the holder.`},
			"unique_by": map[string]any{"type": "string",
				"description": `The fields of the args the unique key is made of, comma-separated paths such as "To,Subject" (default: all the args); needs unique.`},
			"unique_until": map[string]any{"type": "string", "enum": []any{"started", "completed", "ended"},
				"description": `Until when the unique key is held (default ended: completed, dead or canceled); needs unique.`},
			"debounce": map[string]any{"$ref": schemas + "Duration",
				"description": `The job waits this long, and a submission of its key while it waits gives it its args and moves its start (200, "debounced": true); needs unique.`},
			"expire": map[string]any{"type": "string",
				"description": `When the job expires if it has not started by then (it ends expired, never run): a Go duration from now such as "10m", or an RFC 3339 time.`},
		},
	}
}

// describe adds a description to s, keeping one it has.
func describe(s any, desc string) any {
	m, ok := s.(map[string]any)
	if !ok {
		// A named type's component: OpenAPI 3.1 lets a description stand
		// beside the $ref, so the result stays an alias of that type.
		return map[string]any{"$ref": s, "description": desc}
	}
	if _, has := m["description"]; !has {
		m = maps.Clone(m)
		m["description"] = desc
	}
	return m
}

func orNull(s any, desc string) any {
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}, "description": desc}
}

// camel turns a wire name into the start of a component name: "send_email"
// is SendEmail.
func camel(name string) string {
	var b strings.Builder
	up := true
	for _, c := range name {
		if !(unicode.IsLetter(c) || unicode.IsDigit(c)) || c > unicode.MaxASCII {
			up = true
			continue
		}
		if b.Len() == 0 && unicode.IsDigit(c) {
			b.WriteString("Task")
		}
		if up {
			c = unicode.ToUpper(c)
			up = false
		}
		b.WriteRune(c)
	}
	if b.Len() == 0 {
		return "Task"
	}
	return b.String()
}

func nonEmpty(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// jobHasTaskArgsResult reports whether the job answer t has the keys a
// typed job narrows.
func jobHasTaskArgsResult(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	have := map[string]bool{}
	for _, f := range jsonFields(t) {
		have[f.name] = true
	}
	return have["task"] && have["args"] && have["result"]
}

// durationPattern is what time.ParseDuration takes, sign aside.
const durationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
