package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// Field describes one field of a task's arguments, for people and tools (the
// CLI, GET /api/v1/tasks).
type Field struct {
	Name string `json:"name"`           // Go field name
	JSON string `json:"json,omitempty"` // key in JSON input, if it differs
	Type string `json:"type"`           // Go type, as written
}

// TaskInfo describes a task: its wire name, its defaults and its arguments.
type TaskInfo struct {
	Name      string        `json:"name"`
	Route     string        `json:"route"`
	Priority  Priority      `json:"priority"`
	Retries   int           `json:"retries"`
	Timeout   time.Duration `json:"timeout,omitempty"` // 0: the worker's default
	Unique    time.Duration `json:"unique,omitempty"`
	ResultTTL time.Duration `json:"result_ttl,omitempty"`
	Backoff   time.Duration `json:"backoff,omitempty"` // the first retry's delay; 0: the worker's Backoff
	ArgsType  string        `json:"args_type,omitempty"`
	Args      []Field       `json:"args,omitempty"`
	Result    string        `json:"result,omitempty"`
	Cron      *CronEntry    `json:"cron,omitempty"`
}

// Describe attaches what generated code knows at compile time: the type and
// fields of the arguments, the result type, and a strict JSON decoder of the
// arguments (used by the CLI and the HTTP API). It returns t.
func (t *Task[A, R]) Describe(argsType string, fields []Field, result string, decode func([]byte) (A, error)) *Task[A, R] {
	t.argsType, t.fields, t.result, t.decodeJSON = argsType, fields, result, decode
	return t
}

// Var records the name of the Go variable that holds the task (generated
// code calls it), so that messages name what the user wrote, not only the
// wire name.
func (t *Task[A, R]) Var(name string) *Task[A, R] {
	t.varName = name
	return t
}

// Info describes the task with its defaults applied.
func (t *Task[A, R]) Info() TaskInfo {
	cfg := jobConfig{route: "default", priority: PriorityNormal, maxRetries: DefaultMaxRetries}
	for _, o := range t.defaults {
		o(&cfg)
	}
	return TaskInfo{
		Name: t.name, Route: cfg.route, Priority: cfg.priority, Retries: cfg.maxRetries,
		Timeout: cfg.timeout, Unique: cfg.uniqueTTL, ResultTTL: cfg.resultTTL, Backoff: cfg.backoff,
		ArgsType: t.argsType, Args: t.fields, Result: t.result,
	}
}

// EnqueueJSON decodes args from JSON with the task's strict decoder (unknown
// fields are errors naming the field) and enqueues them.
func (t *Task[A, R]) EnqueueJSON(ctx context.Context, data []byte, opts ...Option) (string, error) {
	args, err := t.decodeArgsJSON(data)
	if err != nil {
		return "", err
	}
	return t.Enqueue(ctx, args, opts...)
}

// decodeArgsJSON decodes args from JSON with the task's strict decoder; an
// error matches ErrBadArgs.
func (t *Task[A, R]) decodeArgsJSON(data []byte) (A, error) {
	var args A
	var err error
	if t.decodeJSON != nil {
		args, err = t.decodeJSON(data)
	} else {
		err = DecodeStrictJSON(data, &args)
	}
	if err != nil {
		return args, fmt.Errorf("bananas: args of %s: %w", t.name, badArgs{err})
	}
	return args, nil
}

// badArgs marks an error of the args themselves (it matches ErrBadArgs).
type badArgs struct{ error }

func (e badArgs) Unwrap() error        { return e.error }
func (e badArgs) Is(target error) bool { return target == ErrBadArgs }

// DecodeStrictJSON decodes data into v exactly: an object key must be a
// field's JSON name as written (encoding/json would also take "url" for URL),
// unknown keys and trailing data are refused, and so are empty input and null
// — except for a task that takes no args (None), where they mean nothing. Each
// error names the field. Generated decoders call it.
func DecodeStrictJSON(data []byte, v any) error {
	_, none := v.(*None)
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		if none {
			return nil
		}
		if len(trimmed) == 0 {
			return errors.New("no args given: want a JSON object")
		}
		return errors.New("args are null: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &ute):
			return fmt.Errorf("field %q: want %s, got JSON %s", ute.Field, ute.Type, ute.Value)
		case errors.As(err, &se):
			return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return exactKeys(data, reflect.TypeOf(v), "")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// exactKeys checks that every object key in data is the JSON name of a field
// of t as written; data already decoded into a t, so its shape is right.
func exactKeys(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil // decodes itself (time.Time), or nothing to look into
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil
		}
		fields := jsonFields(t)
		for key, raw := range obj {
			ft, ok := fields[key]
			if !ok {
				for name := range fields {
					if strings.EqualFold(name, key) {
						return fmt.Errorf("unknown field %q%s: JSON keys match exactly; did you mean %q?", key, at(path), name)
					}
				}
				return fmt.Errorf("unknown field %q%s", key, at(path))
			}
			if err := exactKeys(raw, ft, join(path, key)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte travels as base64
		}
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return nil
		}
		for i, raw := range items {
			if err := exactKeys(raw, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil
		}
		for key, raw := range obj {
			if err := exactKeys(raw, t.Elem(), fmt.Sprintf("%s[%q]", path, key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's fields, as encoding/json names them
// (tags honoured, "-" skipped, embedded structs' fields promoted), to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for name, typ := range jsonFields(ft) {
					if _, shadowed := out[name]; !shadowed {
						out[name] = typ
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag != "" {
			name = tag
		}
		out[name] = f.Type
	}
	return out
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return " in " + path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
