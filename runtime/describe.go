package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Info describes the task with its defaults applied.
func (t *Task[A, R]) Info() TaskInfo {
	cfg := jobConfig{route: "default", priority: PriorityNormal, maxRetries: DefaultMaxRetries}
	for _, o := range t.defaults {
		o(&cfg)
	}
	return TaskInfo{
		Name: t.name, Route: cfg.route, Priority: cfg.priority, Retries: cfg.maxRetries,
		Timeout: cfg.timeout, Unique: cfg.uniqueTTL, ResultTTL: cfg.resultTTL,
		ArgsType: t.argsType, Args: t.fields, Result: t.result,
	}
}

// EnqueueJSON decodes args from JSON with the task's strict decoder (unknown
// fields are errors naming the field) and enqueues them.
func (t *Task[A, R]) EnqueueJSON(ctx context.Context, data []byte, opts ...Option) (string, error) {
	var args A
	var err error
	if t.decodeJSON != nil {
		args, err = t.decodeJSON(data)
	} else {
		err = DecodeStrictJSON(data, &args)
	}
	if err != nil {
		return "", fmt.Errorf("bananas: args of %s: %w", t.name, err)
	}
	return t.Enqueue(ctx, args, opts...)
}

// DecodeStrictJSON decodes data into v, refusing unknown fields and trailing
// data. Empty input and null decode to the zero value. Generated decoders call it.
func DecodeStrictJSON(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
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
	return nil
}
