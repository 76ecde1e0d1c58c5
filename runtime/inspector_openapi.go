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
			Shapes: map[string]reflect.Type{
				"Job": reflect.TypeFor[jobJSON](), "JobPage": reflect.TypeFor[pageJSON](), "Queue": reflect.TypeFor[routeJSON](),
				"Task": reflect.TypeFor[taskJSON](), "CronEntry": reflect.TypeFor[cronJSON](), "Worker": reflect.TypeFor[WorkerState](),
				"Stats": reflect.TypeFor[statsJSON](), "DeadJobList": reflect.TypeFor[pageJSON](),
				"Canceled": reflect.TypeFor[canceledJSON](),
				// Types the shapes above hold, by the names a reader of the
				// document knows them by.
				"JobSummary": reflect.TypeFor[jobSummaryJSON](), "StatsPoint": reflect.TypeFor[pointJSON](),
				"CronSpec": reflect.TypeFor[cronSpec](),
			},
			// jsonTime writes its own JSON: an RFC 3339 time, or null when unset.
			Custom: map[reflect.Type]map[string]any{
				reflect.TypeFor[jsonTime](): {"type": []any{"string", "null"}, "format": "date-time"},
			},
		})
	})
	return in.openapiDoc, in.openapiErr
}

// canceledJSON is the answer of POST /api/v1/jobs/{id}/cancel (apiBackend.Cancel):
// the job and its status after the call, canceled, or processing while the
// worker running it has yet to act.
type canceledJSON struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
}
