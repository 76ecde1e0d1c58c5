package runtime

import (
	"reflect"

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
			tasks = append(tasks, openapi.Task{Name: name, Route: info.Route, Priority: string(info.Priority), Args: h.argsType, Result: h.resultType})
		}
		in.openapiDoc, in.openapiErr = openapi.Document(tasks, openapi.Options{
			Title: "Bananas", Version: "1",
			Shapes: map[string]reflect.Type{
				"Job": reflect.TypeFor[jobJSON](), "JobPage": reflect.TypeFor[pageJSON](), "Queue": reflect.TypeFor[routeJSON](),
				"Task": reflect.TypeFor[taskJSON](), "CronEntry": reflect.TypeFor[cronJSON](), "Worker": reflect.TypeFor[WorkerState](),
				"Stats": reflect.TypeFor[statsJSON](), "DeadJobList": reflect.TypeFor[pageJSON](),
			},
			// jsonTime writes its own JSON: an RFC 3339 time, or null when unset.
			Custom: map[reflect.Type]map[string]any{
				reflect.TypeFor[jsonTime](): {"type": []any{"string", "null"}, "format": "date-time"},
			},
		})
	})
	return in.openapiDoc, in.openapiErr
}
