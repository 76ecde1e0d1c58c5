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

	// Shapes are the Go types of the answers' bodies (the runtime's views),
	// each a component of the document under its key. A named struct type
	// given here is that component itself, so a field of its type elsewhere
	// refers to it by this name. The server writes them, so their keys that
	// encoding/json always writes (no omitempty or omitzero) are required.
	// These keys are the bodies of endpoints:
	//
	//	Job          GET /api/v1/jobs/{id}
	//	JobPage      GET /api/v1/jobs
	//	JobResult    GET /api/v1/jobs/{id}/result  (default: Job)
	//	Canceled     POST /api/v1/jobs/{id}/cancel (default: Job)
	//	DeadJobList  GET /api/v1/dlq               (default: an array of DeadJob)
	//	TaskList     GET /api/v1/tasks             (default: an array of Task)
	//	QueueList    GET /api/v1/queues            (default: an array of Queue)
	//	CronList     GET /api/v1/cron              (default: an array of CronEntry)
	//	WorkerList   GET /api/v1/workers           (default: an array of Worker)
	//	Stats        GET /api/v1/stats
	//	Error        every 4xx and 5xx (default: {"error", "field"})
	//
	// Any other key names the component of a type the answers hold (a
	// JobPage's JobSummary, say) as readers know it. Keys are PascalCase.
	// An endpoint whose body is given by none of them is described as any
	// JSON value. When Job has the keys task, args and result, the job
	// endpoints answer TypedJob instead: one variant per task, chosen by
	// task, whose args and result are that task's schemas.
	Shapes map[string]reflect.Type

	// Custom are the schemas of types that encode themselves (MarshalJSON),
	// whose JSON reflection cannot see: a time that is null when zero, say.
	Custom map[reflect.Type]map[string]any
}

const schemas = "#/components/schemas/"

// ownComponents are the components the document defines whatever the tasks.
var ownComponents = []string{"Submission", "TypedJob", "OtherJob", "Priority", "Duration"}

// Document returns the OpenAPI 3.1.0 document of the HTTP API serving tasks,
// as JSON. The same tasks and options give the same bytes: tasks are sorted
// by name, and every object's keys are written in order.
func Document(tasks []Task, o Options) ([]byte, error) {
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
	if o.Title == "" {
		o.Title = "Bananas"
	}
	if o.Version == "" {
		o.Version = "0"
	}

	g := newGenerator(o.Custom)
	comps := map[string]any{}
	taken := map[string]bool{}
	fixed := map[reflect.Type]string{}

	// The shapes first: their keys are the names the caller chose. They are
	// answers: the keys always written are required.
	g.answers = true
	for _, key := range slices.Sorted(maps.Keys(o.Shapes)) {
		t := o.Shapes[key]
		if componentName(key) != key {
			return nil, fmt.Errorf("openapi: shape %q: a component name is PascalCase, letters and digits only, without a JSON suffix (such as %q)", key, componentName(key))
		}
		if slices.Contains(ownComponents, key) {
			return nil, fmt.Errorf("openapi: shape %q: the document names a component of its own so", key)
		}
		s, err := g.schema(t, key)
		if err != nil {
			return nil, err
		}
		taken[key] = true
		if r, ok := s.(ref); ok {
			if _, named := fixed[r.t]; !named {
				fixed[r.t] = key
				continue // the type's own component, filled in below
			}
		}
		comps[key] = s
	}
	g.answers = false
	if _, ok := o.Shapes["Error"]; !ok {
		taken["Error"] = true
		comps["Error"] = map[string]any{
			"type":     "object",
			"required": []any{"error"},
			"properties": map[string]any{
				"error": map[string]any{"type": "string", "description": "What is wrong, for people."},
				"field": map[string]any{"type": "string", "description": "The body key or query parameter the error is about, when there is one."},
			},
		}
	}
	for _, n := range ownComponents {
		taken[n] = true
	}

	// Then the tasks: a submission, a result and a typed job each.
	typedJobs := jobHasTaskArgsResult(g, o.Shapes["Job"])
	var variants, jobVariants, names []any
	subMapping, jobMapping := map[string]any{}, map[string]any{}
	examples := map[string]any{}
	for _, t := range tasks {
		args, err := g.schema(t.Args, fmt.Sprintf("task %s: args %s", t.Name, t.Args))
		if err != nil {
			return nil, err
		}
		var result any = map[string]any{"type": "null", "description": "The task has no result."}
		if t.Result != nil {
			if result, err = g.schema(t.Result, fmt.Sprintf("task %s: result %s", t.Name, t.Result)); err != nil {
				return nil, err
			}
		}
		base := camel(t.Name)
		sub := claim(taken, base+"Submission")
		res := claim(taken, base+"Result")
		comps[res] = describe(result, fmt.Sprintf("The result of task %s.", t.Name))
		comps[sub] = submission(t, args)
		variants = append(variants, map[string]any{"$ref": schemas + sub})
		subMapping[t.Name] = schemas + sub
		names = append(names, t.Name)
		if v, err := example(t.Args); err == nil {
			examples[t.Name] = map[string]any{"summary": "A job of task " + t.Name, "value": map[string]any{"name": t.Name, "args": v}}
		}
		if typedJobs {
			job := claim(taken, base+"Job")
			comps[job] = map[string]any{
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
			jobVariants = append(jobVariants, map[string]any{"$ref": schemas + job})
			jobMapping[t.Name] = schemas + job
		}
	}

	names2 := g.name(taken, fixed)
	for t, d := range g.defs {
		comps[names2[t]] = d
	}

	comps["Priority"] = map[string]any{"type": "string", "enum": []any{"high", "normal", "low"}}
	comps["Duration"] = map[string]any{
		"type":        "string",
		"pattern":     durationPattern,
		"description": `A Go duration (time.ParseDuration): a number and a unit (ns, us, ms, s, m, h), repeated, such as "10s" or "1h30m".`,
		"examples":    []any{"10s", "1h30m"},
	}
	if len(variants) > 0 {
		comps["Submission"] = map[string]any{
			"description":   "A job to enqueue: the name of a registered task and its args, which follow that task's schema.",
			"oneOf":         variants,
			"discriminator": map[string]any{"propertyName": "name", "mapping": subMapping},
		}
	} else {
		comps["Submission"] = map[string]any{"description": "No task is registered: nothing can be submitted.", "not": map[string]any{}}
	}
	job := shapeOr(o.Shapes, "Job", nil)
	if typedJobs {
		if len(names) > 0 {
			comps["OtherJob"] = map[string]any{
				"description": "A job of a task this server does not know (another program's): its args and result are null.",
				"allOf": []any{
					map[string]any{"$ref": schemas + "Job"},
					map[string]any{"properties": map[string]any{"task": map[string]any{"not": map[string]any{"enum": names}}}},
				},
			}
			comps["TypedJob"] = map[string]any{
				"description":   "A job, as the variant of its task: the task key tells which (see the discriminator), and that variant's args and result are the task's own schemas (<Task>Submission's args, <Task>Result).",
				"oneOf":         append(jobVariants, map[string]any{"$ref": schemas + "OtherJob"}),
				"discriminator": map[string]any{"propertyName": "task", "mapping": jobMapping},
			}
		} else {
			comps["TypedJob"] = map[string]any{"$ref": schemas + "Job"}
		}
		job = map[string]any{"$ref": schemas + "TypedJob"}
	}

	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   o.Title,
			"version": o.Version,
			"description": nonEmpty(o.Description,
				"The HTTP API of a Bananas deployment: submit typed jobs, read their state and results, and operate queues, the dead-letter queue, cron and workers."),
		},
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"security":          []any{map[string]any{"bearer": []any{}}},
		"tags": []any{
			map[string]any{"name": "jobs"}, map[string]any{"name": "tasks"}, map[string]any{"name": "queues"},
			map[string]any{"name": "dlq"}, map[string]any{"name": "cron"}, map[string]any{"name": "workers"},
			map[string]any{"name": "stats"}, map[string]any{"name": "meta"},
		},
		"paths": paths(o.Shapes, job, examples),
		"components": map[string]any{
			"schemas":   comps,
			"responses": errorResponses(),
			"securitySchemes": map[string]any{"bearer": map[string]any{
				"type": "http", "scheme": "bearer",
				"description": "The server's API_TOKEN. A server started without API_TOKEN asks for none (and listens on loopback only).",
			}},
		},
	}
	out := resolver{names: names2, prefix: schemas}.resolve(doc)
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return append(b, '\n'), nil
}

// durationPattern is what time.ParseDuration takes, sign aside.
const durationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

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
		},
	}
}

// jobHasTaskArgsResult reports whether the Job shape has the keys a typed
// job narrows.
func jobHasTaskArgsResult(g *generator, t reflect.Type) bool {
	if t == nil {
		return false
	}
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
