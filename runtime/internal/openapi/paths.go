package openapi

import (
	"reflect"
)

// paths are the HTTP API's endpoints as the api package serves them: its
// parameters (it refuses any other query parameter), its status codes and
// the bodies of its answers. job is the schema of one job.
func paths(shapes map[string]reflect.Type, job any, examples map[string]any) map[string]any {
	id := pathParam("id", "The job's id.")
	route := pathParam("route", "The route (queue).")
	// The states a listing reads: the queues' (active is processing, dead
	// is failed). Finished jobs are not listed: they are results, read by id.
	listing := func(states []any, desc string) []any {
		return []any{
			query("route", "Only jobs of this route.", str()),
			query("state", desc, map[string]any{"type": "string", "enum": states, "default": states[0]}),
			query("task", "Only jobs of this task (wire name).", str()),
			query("q", "Only jobs whose id, task, args or error contain this text.", str()),
			query("cursor", "Where the previous page ended (its next cursor).", str()),
			query("limit", "At most this many jobs.", map[string]any{"type": "integer", "minimum": 1, "maximum": 500}),
			query("order", "Oldest first (default) or newest first.", map[string]any{"type": "string", "enum": []any{"oldest", "newest"}, "default": "oldest"}),
		}
	}
	jobListing := listing([]any{"pending", "scheduled", "processing", "active", "failed", "dead"},
		"Only jobs in this state: pending (default), scheduled, processing (or active: being run) or failed (or dead: in the dead-letter queue). Completed jobs are not listed.")
	deadListing := listing([]any{"failed", "dead"}, "The dead-letter queue holds failed (dead) jobs only.")
	action := func(o map[string]any) map[string]any {
		o["responses"].(map[string]any)["403"] = errRef("Forbidden")
		return o
	}

	submit := op("submitJob", "jobs", "Enqueue a job of a registered task.", nil, map[string]any{
		"201": map[string]any{
			"description": "Enqueued.",
			"headers": map[string]any{"Location": map[string]any{
				"description": "The job's URL.", "schema": str(),
			}},
			"content": jsonBody(object(map[string]any{"id": str(), "warning": map[string]any{
				"type": "string", "description": "Present when no live worker takes the job's route: the job waits until one does.",
			}}, "id")),
		},
		"400": errRef("BadRequest"),
		"413": errRef("TooLarge"),
	})
	body := map[string]any{"schema": map[string]any{"$ref": schemas + "Submission"}}
	if len(examples) > 0 {
		body["examples"] = examples
	}
	submit["requestBody"] = map[string]any{
		"required":    true,
		"description": "The task's wire name and its args, which must follow that task's schema exactly: keys as written (case matters), no others.",
		"content":     map[string]any{"application/json": body},
	}

	return map[string]any{
		"/api/v1/jobs/batch": map[string]any{"post": action(submitBatch())},
		"/api/v1/jobs": map[string]any{
			"post": action(submit),
			"get": op("listJobs", "jobs", "List jobs.", jobListing, map[string]any{
				"200": ok("A page of jobs.", shapeOr(shapes, "JobPage", nil)),
				"400": errRef("BadRequest"),
			}),
		},
		"/api/v1/jobs/{id}": map[string]any{
			"parameters": []any{id},
			"get": op("getJob", "jobs", "A job: its state, args and result as JSON.", nil, map[string]any{
				"200": ok("The job.", job),
				"404": errRef("NotFound"),
			}),
			"delete": action(op("deleteJob", "jobs", "Delete a pending or scheduled job.", nil, map[string]any{
				"200": ok("Deleted.", object(map[string]any{"deleted": str()}, "deleted")),
				"404": errRef("NotFound"),
				"409": errRef("Conflict"),
			})),
		},
		"/api/v1/jobs/{id}/result": map[string]any{
			"parameters": []any{id},
			"get": op("getJobResult", "jobs", "Wait for a job to finish, and read it with its result.", []any{
				query("wait", "How long to wait for the job to finish: a Go duration from 0 to 5m, such as 30s (default 0: answer at once).", map[string]any{"$ref": schemas + "Duration"}),
			}, map[string]any{
				"200": ok("The job has finished.", shapeOr(shapes, "JobResult", job)),
				"202": ok("The job has not finished yet: ask again.", shapeOr(shapes, "JobResult", job)),
				"400": errRef("BadRequest"),
				"404": errRef("NotFound"),
			}),
		},
		"/api/v1/jobs/{id}/cancel": map[string]any{
			"parameters": []any{id},
			"post": action(op("cancelJob", "jobs", "Cancel a job: one not started is not run, a running one has its context canceled.", nil, map[string]any{
				"200": ok("Canceled.", shapeOr(shapes, "Canceled", job)),
				"404": errRef("NotFound"),
				"409": errRef("Conflict"),
			})),
		},
		"/api/v1/tasks": map[string]any{
			"get": op("listTasks", "tasks", "The registered tasks, their defaults and args.", nil, map[string]any{
				"200": ok("The tasks.", list(shapes, "TaskList", "Task", nil)),
			}),
		},
		"/api/v1/queues": map[string]any{
			"get": op("listQueues", "queues", "The routes, their depths and whether they are paused.", nil, map[string]any{
				"200": ok("The queues.", list(shapes, "QueueList", "Queue", nil)),
			}),
		},
		"/api/v1/routes/{route}/pause": map[string]any{
			"parameters": []any{route},
			"post": action(op("pauseRoute", "queues", "Pause a route: workers take no new job from it.", nil, map[string]any{
				"200": ok("Paused.", object(map[string]any{"route": str(), "paused": map[string]any{"const": true}}, "route", "paused")),
				"404": errRef("NotFound"), // a route no job, registered task or live worker has: the error lists the known ones
			})),
		},
		"/api/v1/routes/{route}/resume": map[string]any{
			"parameters": []any{route},
			"post": action(op("resumeRoute", "queues", "Resume a paused route.", nil, map[string]any{
				"200": ok("Resumed.", object(map[string]any{"route": str(), "paused": map[string]any{"const": false}}, "route", "paused")),
				"404": errRef("NotFound"), // a route that is not paused and that nothing knows
			})),
		},
		"/api/v1/dlq": map[string]any{
			"get": op("listDeadJobs", "dlq", "List the dead-letter queue.", deadListing, map[string]any{
				"200": ok("A page of dead jobs.", list(shapes, "DeadJobList", "DeadJob", nil)),
				"400": errRef("BadRequest"),
			}),
			"delete": action(op("purgeDeadJobs", "dlq", "Delete dead jobs for good: all of them, or those of one task.", []any{
				query("task", "Only dead jobs of this task.", str()),
				query("older_than", "Only dead jobs that died longer ago than this Go duration, such as 24h.", map[string]any{"$ref": schemas + "Duration"}),
			}, map[string]any{
				"200": ok("Purged.", object(map[string]any{"purged": count()}, "purged")),
				"400": errRef("BadRequest"),
			})),
		},
		"/api/v1/dlq/{id}/replay": map[string]any{
			"parameters": []any{id},
			"post": action(op("replayDeadJob", "dlq", "Enqueue a dead job again.", nil, map[string]any{
				"200": ok("Replayed.", object(map[string]any{"replayed": str()}, "replayed")),
				"404": errRef("NotFound"),
			})),
		},
		"/api/v1/dlq/replay": map[string]any{
			"post": action(op("replayDeadJobs", "dlq", "Enqueue dead jobs again: all of them, or those of one task.", []any{
				query("task", "Only dead jobs of this task.", str()),
			}, map[string]any{
				"200": ok("Replayed.", object(map[string]any{"replayed": count()}, "replayed")),
				"400": errRef("BadRequest"),
			})),
		},
		"/api/v1/cron": map[string]any{
			"get": op("listCron", "cron", "The cron entries, their last and next runs.", nil, map[string]any{
				"200": ok("The cron entries.", list(shapes, "CronList", "CronEntry", nil)),
			}),
		},
		"/api/v1/cron/{name}/run": map[string]any{
			"parameters": []any{pathParam("name", "The cron entry's name: its task's wire name.")},
			"post": action(op("runCron", "cron", "Run a cron entry now: enqueue one job of its task (zero args, its route and priority); its schedule is left as it is.", nil, map[string]any{
				"201": map[string]any{
					"description": "Enqueued.",
					"headers": map[string]any{"Location": map[string]any{
						"description": "The job's URL.", "schema": str(),
					}},
					"content": jsonBody(object(map[string]any{"id": str()}, "id")),
				},
				"404": errRef("NotFound"),
				"409": errRef("Conflict"),
			})),
		},
		"/api/v1/workers": map[string]any{
			"get": op("listWorkers", "workers", "The live workers and schedulers, from their heartbeats.", nil, map[string]any{
				"200": ok("The workers.", list(shapes, "WorkerList", "Worker", nil)),
			}),
		},
		"/api/v1/stats": map[string]any{
			"get": op("getStats", "stats", "Counts of jobs per minute over a window.", []any{
				query("window", "The window: the last hour (default) or day.", map[string]any{"type": "string", "enum": []any{"1h", "24h"}, "default": "1h"}),
			}, map[string]any{
				"200": ok("The per-minute history.", shapeOr(shapes, "Stats", nil)),
				"400": errRef("BadRequest"),
			}),
		},
		"/api/v1/openapi.json": map[string]any{
			"get": op("getOpenAPI", "meta", "This document.", nil, map[string]any{
				"200": ok("The OpenAPI 3.1 document.", map[string]any{"type": "object"}),
			}),
		},
		"/healthz": map[string]any{
			"get": probe("healthz", "Readiness: whether the server reaches Redis."),
		},
		"/livez": map[string]any{
			"get": probe("livez", "Liveness: whether the server answers."),
		},
	}
}

// maxBatch is the most jobs POST /api/v1/jobs/batch takes (api.MaxBatch).
const maxBatch = 1000

// submitBatch is POST /api/v1/jobs/batch: submissions enqueued all or none.
func submitBatch() map[string]any {
	refusal := object(map[string]any{
		"index": map[string]any{"type": "integer", "minimum": 0, "description": "The job's 0-based index in jobs."},
		"field": map[string]any{"type": "string", "description": `The key of its submission that is wrong ("" for the submission as a whole).`},
		"error": map[string]any{"type": "string", "description": "What is wrong, for people."},
	}, "index", "field", "error")
	batchError := func(desc string) map[string]any {
		return ok(desc, map[string]any{
			"type":     "object",
			"required": []any{"error"},
			"properties": map[string]any{
				"error": map[string]any{"type": "string", "description": "What is wrong, for people."},
				"field": map[string]any{"type": "string", "description": "The body key the error is about, when it is about the batch as a whole."},
				"jobs":  map[string]any{"type": "array", "items": refusal, "description": "Every job the answer is about, by index."},
				"ids": map[string]any{"type": "array", "items": str(),
					"description": `One slot per job: its id when it is stored, "" when it is not (500), the id of the job holding a duplicate's unique key (409).`},
			},
		})
	}
	o := op("submitJobs", "jobs", "Enqueue up to 1,000 jobs at once: all of them or none.", nil, map[string]any{
		"201": ok("Every job enqueued; ids in the order of jobs.", object(map[string]any{
			"ids": map[string]any{"type": "array", "items": str(), "minItems": 1, "maxItems": maxBatch},
		}, "ids")),
		"400": batchError("Nothing was enqueued: jobs lists every refused job (index, field, error), or field names what is wrong with the batch itself (over 1,000 jobs, an unknown key, not JSON)."),
		"409": batchError("Jobs of a task with a unique window duplicate jobs already enqueued: jobs lists them, and they were not enqueued again; the others were. ids has every job's id, a duplicate's the id of the job that holds its key."),
		"413": errRef("TooLarge"),
	})
	o["responses"].(map[string]any)["500"] = batchError(`Redis failed part-way through a batch over several routes or priorities (one call each, in the order jobs first names them): ids has the id of each job stored and "" for the others, which jobs lists; the job of the failing call may or may not be stored (GET /api/v1/jobs/{id} tells). A batch of one route and priority is stored whole or not at all.`)
	o["requestBody"] = map[string]any{
		"required":    true,
		"description": "Up to 1,000 submissions, each as POST /api/v1/jobs takes it. Every one is checked before any is enqueued.",
		"content": jsonBody(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"jobs"},
			"properties": map[string]any{
				"jobs": map[string]any{"type": "array", "minItems": 1, "maxItems": maxBatch, "items": map[string]any{"$ref": schemas + "Submission"}},
			},
		}),
	}
	return o
}

// op is an operation; every /api operation may answer 401 and 500.
func op(id, tag, summary string, params []any, responses map[string]any) map[string]any {
	responses["401"] = errRef("Unauthorized")
	responses["500"] = errRef("ServerError")
	o := map[string]any{"operationId": id, "tags": []any{tag}, "summary": summary, "responses": responses}
	if len(params) > 0 {
		o["parameters"] = params
	}
	return o
}

func probe(id, summary string) map[string]any {
	status := object(map[string]any{"status": map[string]any{"type": "string", "enum": []any{"ok", "unavailable"}}, "error": str()}, "status")
	return map[string]any{
		"operationId": id, "tags": []any{"meta"}, "summary": summary,
		"security": []any{}, // probes carry no token
		"responses": map[string]any{
			"200": ok("Up.", status),
			"503": ok("Down: error says why.", status),
		},
	}
}

func errorResponses() map[string]any {
	e := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": jsonBody(map[string]any{"$ref": schemas + "Error"})}
	}
	unauthorized := e("No bearer token, or a wrong one (the server has API_TOKEN set).")
	unauthorized["headers"] = map[string]any{"WWW-Authenticate": map[string]any{"schema": str()}}
	return map[string]any{
		"BadRequest":   e("The request is wrong: field names the body key or query parameter."),
		"Unauthorized": unauthorized,
		"Forbidden":    e("The API is read-only (API_READ_ONLY): actions are refused."),
		"NotFound":     e("No such job."),
		"Conflict":     e("The job is not in a state that allows this."),
		"TooLarge":     e("The body is over the server's limit."),
		"ServerError":  e("The server or Redis failed; the request may be sent again."),
	}
}

func errRef(name string) map[string]any {
	return map[string]any{"$ref": "#/components/responses/" + name}
}

func ok(desc string, schema any) map[string]any {
	return map[string]any{"description": desc, "content": jsonBody(schema)}
}

func jsonBody(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func pathParam(name, desc string) map[string]any {
	return map[string]any{"name": name, "in": "path", "required": true, "description": desc, "schema": str()}
}

func query(name, desc string, schema any) map[string]any {
	return map[string]any{"name": name, "in": "query", "description": desc, "schema": schema}
}

func str() map[string]any { return map[string]any{"type": "string"} }

func count() map[string]any { return map[string]any{"type": "integer", "minimum": 0} }

func object(props map[string]any, required ...string) map[string]any {
	req := make([]any, len(required))
	for i, r := range required {
		req[i] = r
	}
	return map[string]any{"type": "object", "properties": props, "required": req}
}

// unknown is the body of an answer whose shape the caller did not give.
func unknown() map[string]any {
	return map[string]any{"description": "Any JSON value: this server does not describe this body."}
}

// shapeOr is the shape of key, else otherwise, else any JSON value.
func shapeOr(shapes map[string]reflect.Type, key string, otherwise any) any {
	if _, ok := shapes[key]; ok {
		return map[string]any{"$ref": schemas + key}
	}
	if otherwise != nil {
		return otherwise
	}
	return unknown()
}

// list is the shape of listKey, else an array of elem (or of the shape of
// elemKey): the CLI's --json listings are arrays.
func list(shapes map[string]reflect.Type, listKey, elemKey string, elem any) any {
	if _, ok := shapes[listKey]; ok {
		return map[string]any{"$ref": schemas + listKey}
	}
	if elem == nil {
		if _, ok := shapes[elemKey]; !ok {
			return unknown()
		}
		elem = map[string]any{"$ref": schemas + elemKey}
	}
	return map[string]any{"type": "array", "items": elem}
}
