package runtime

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// declaredTasks maps the name of every task declared in the program (by
// NewTask: its generated code's variables) to the decoders of its args and
// result into JSON, for Client.Job and Client.Workflow. Two declarations of
// one name with different types leave no decoder: which one a job was made
// by cannot be told.
var declaredTasks sync.Map // name -> *argsDecoder

type argsDecoder struct {
	typ, result reflect.Type
	toJSON      func(msgpack []byte) (json.RawMessage, error) // nil: declared with different types
	// resultJSON decodes the task's result; nil as toJSON, and for a task
	// without a result (None).
	resultJSON func(msgpack []byte) (json.RawMessage, error)
	// keyOf reads the key (KeyBy) of stored args, for a workflow's step
	// whose args were a predecessor's result; nil as toJSON.
	keyOf func(msgpack []byte) (string, error)
}

// declaredArgsJSON is the JSON of args, stored by a job of task name, when
// the program declares that task; nil when it does not, or they do not
// decode.
func declaredArgsJSON(name string, args []byte) json.RawMessage {
	v, ok := declaredTasks.Load(name)
	if !ok || len(args) == 0 || v.(*argsDecoder).toJSON == nil {
		return nil
	}
	b, err := v.(*argsDecoder).toJSON(args)
	if err != nil {
		return nil
	}
	return b
}

// keyOfStoredArgs is the key of a step's job of task name, read from its
// args by the task's KeyBy: the process that makes the job must declare
// the task (link its generated code).
func keyOfStoredArgs(name string, args []byte) (string, error) {
	v, ok := declaredTasks.Load(name)
	if !ok || v.(*argsDecoder).keyOf == nil {
		return "", fmt.Errorf("task %s is keyed by its args, and this program does not declare it (or declares it twice with other types): link its generated code to make its steps", name)
	}
	return v.(*argsDecoder).keyOf(args)
}

// declaredResultJSON is the JSON of result, a result of task name (a
// gather's when name is ""): through the declared task's type when the
// program declares it, else as the msgpack reads without its type; nil for
// none, a task without a result, or bytes that do not decode.
func declaredResultJSON(name string, result []byte) json.RawMessage {
	if len(result) == 0 {
		return nil
	}
	if v, ok := declaredTasks.Load(name); ok && v.(*argsDecoder).toJSON != nil {
		d := v.(*argsDecoder)
		if d.resultJSON == nil {
			return nil
		}
		b, err := d.resultJSON(result)
		if err != nil {
			return nil
		}
		return b
	}
	var v any
	if decode(result, &v) != nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
