package runtime

import (
	"reflect"

	"github.com/bananas-go/bananas/runtime/admin"
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
				"Job": wireType(admin.Job{}), "JobPage": wireType(admin.JobPage{}), "Queue": wireType(admin.Route{}),
				"Task": wireType(admin.Task{}), "CronEntry": wireType(admin.CronEntry{}), "Worker": reflect.TypeFor[admin.Worker](),
				"Stats": wireType(admin.Stats{}), "DeadJobList": wireType(admin.JobPage{}),
				"Canceled": reflect.TypeFor[admin.Canceled](),
				// Types the shapes above hold, by the names a reader of the
				// document knows them by.
				"JobSummary": wireType(admin.JobPage{}).Field(0).Type.Elem(), "StatsPoint": wireType(admin.Stats{}).Field(1).Type.Elem(),
				"CronSpec": reflect.TypeFor[admin.CronSpec](),
			},
			// admin.Time writes its own JSON: an RFC 3339 time, or null when unset.
			Custom: map[reflect.Type]map[string]any{
				reflect.TypeFor[admin.Time](): {"type": []any{"string", "null"}, "format": "date-time"},
			},
		})
	})
	return in.openapiDoc, in.openapiErr
}

// wireType is the type whose JSON shape v writes.
func wireType(v interface{ WireType() any }) reflect.Type { return reflect.TypeOf(v.WireType()) }
