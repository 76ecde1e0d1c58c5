package runtime

import (
	"reflect"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/internal/api"
	"github.com/bananas-go/bananas/runtime/internal/openapi"
)

// OpenAPI is the OpenAPI 3.1 document of the HTTP API for the registered
// tasks: every task's args and result are JSON Schemas, so a client in any
// language can be generated that submits typed jobs.
func (in *Inspector) OpenAPI() ([]byte, error) {
	in.openapiOnce.Do(func() {
		var tasks []openapi.Task
		for _, name := range in.reg.Tasks() {
			h := in.reg.handlers[name]
			info := h.info()
			result := h.resultType
			if result == nil {
				// A task without a result completes with None, whose JSON
				// the job's result is: {}, not null.
				result = reflect.TypeFor[None]()
			}
			tasks = append(tasks, openapi.Task{Name: name, Route: info.Route, Priority: string(info.Priority), Args: h.argsType, Result: result})
		}
		in.openapiDoc, in.openapiErr = openapi.Document(tasks, openapi.Options{
			Title: "Bananas", Version: "1",
			Endpoints: api.Endpoints(),
			// bananastype.Time writes its own JSON: an RFC 3339 time, or null when unset.
			Custom: map[reflect.Type]map[string]any{
				reflect.TypeFor[bananastype.Time](): {"type": []any{"string", "null"}, "format": "date-time"},
			},
		})
	})
	return in.openapiDoc, in.openapiErr
}
