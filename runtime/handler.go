package runtime

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/historian"
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
	// batch gathers the runs of a batch task (HandleBatch) into calls of
	// its function; nil for a task that runs one job at a time.
	batch *batcher
}

// decodeError marks a failure that no retry can fix.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// handlers are the tasks registered on a worker, by name.
type handlers map[string]*handler

// historyRow is the row of rec with its args and result as the JSON of
// their Go types, by the task's generated code when the task is registered
// in hs, or declared in the program (args only); null otherwise.
func (hs handlers) historyRow(route string, rec results.Record) bananastype.Job {
	var args, result []byte
	if h := hs[rec.Name]; h != nil {
		if len(rec.Args) > 0 {
			if b, err := h.argsJSON(rec.Args); err == nil {
				args = b
			}
		}
		if len(rec.Value) > 0 && h.resultType != nil {
			if b, err := h.resultJSON(rec.Value); err == nil {
				result = b
			}
		}
	} else {
		args = declaredArgsJSON(rec.Name, rec.Args)
	}
	return historian.RowOf(route, rec, args, result)
}
