package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// handler is the non-generic form of a registered task: bytes in, bytes out.
// Handle builds one from a typed function, so the worker never sees A or R.
type handler struct {
	name string
	run  func(ctx context.Context, args []byte) (result []byte, err error)

	// For the admin layer: the task's description, and a JSON enqueue
	// through its generated decoder.
	info        func() admin.Task
	limits      func() queue.Limits // the task's, stored by Run on its route
	enqueueJSON func(ctx context.Context, c *Client, data []byte, opts []Option) (string, error)
	// For a batch of the API: a job from JSON, checked and encoded, not sent.
	jobJSON func(c *Client, data []byte, opts []Option, shards map[string]string) (admin.BatchJob, error)
	// For `job ID`: stored args and result as the JSON of their Go types.
	argsJSON, resultJSON func(msgpack []byte) (json.RawMessage, error)
	// For the OpenAPI document: the Go types of the args and the result (nil
	// for None: the task has no result).
	argsType, resultType reflect.Type
	// For a workflow submitted as JSON: a step of the task (workflow_json.go).
	stepJSON func(c *Client, args []byte, first bool) (*stepNode, error)
}

// Handle registers fn as the handler of task t on worker w. Generated Register
// functions call it once per task; registering a name twice is an error
// reported by Run.
func Handle[A, R any](w *Worker, t *Task[A, R], fn func(context.Context, A) (R, error)) {
	var resultType reflect.Type
	if _, none := any(*new(R)).(None); !none {
		resultType = reflect.TypeFor[R]()
	}
	w.register(&handler{
		name:     t.name,
		info:     t.Info,
		limits:   func() queue.Limits { return t.limits },
		argsType: reflect.TypeFor[A](), resultType: resultType,
		enqueueJSON: func(ctx context.Context, c *Client, data []byte, opts []Option) (string, error) {
			return t.With(c).EnqueueJSON(ctx, data, opts...)
		},
		jobJSON: func(c *Client, data []byte, opts []Option, shards map[string]string) (admin.BatchJob, error) {
			return t.With(c).jobJSON(data, opts, shards)
		},
		stepJSON: func(c *Client, args []byte, first bool) (*stepNode, error) {
			return t.With(c).stepNodeJSON(args, first)
		},
		argsJSON:   jsonOf[A],
		resultJSON: jsonOf[R],
		run: func(ctx context.Context, raw []byte) ([]byte, error) {
			var args A
			if err := decode(raw, &args); err != nil {
				return nil, &decodeError{fmt.Errorf("decode args of %s: %w", t.name, err)}
			}
			res, err := fn(ctx, args)
			if err != nil {
				return nil, err
			}
			out, err := encode(res)
			if err != nil {
				return nil, &decodeError{fmt.Errorf("encode result of %s: %w", t.name, err)}
			}
			return out, nil
		},
	})
}

// decodeError marks a failure that no retry can fix.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }
