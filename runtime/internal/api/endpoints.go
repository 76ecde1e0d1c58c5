package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/access"
	"github.com/bananas-go/bananas/runtime/internal/openapi"
)

// endpoint is one route of the API: what the OpenAPI document says of it,
// and what serves it.
type endpoint struct {
	openapi.Endpoint
	serve func(s *server, w http.ResponseWriter, r *http.Request) error
}

// Action is an endpoint the dashboard offers as a form (its Button), with
// the call that serves it.
type Action struct {
	openapi.Endpoint
	// Serve answers r as the endpoint does on a's behalf, past the API's own
	// checks (token, read-only mode, query names, body type): the caller
	// makes its own, and builds r with the endpoint's path values, query
	// and JSON body. An error is the admin layer's, or an *Error.
	Serve func(a admin.Admin, w http.ResponseWriter, r *http.Request) error
}

// Actions are the endpoints that have a Button, in the table's order.
func Actions() []Action {
	var out []Action
	for _, e := range endpoints {
		if e.Button == nil {
			continue
		}
		serve := e.serve
		out = append(out, Action{Endpoint: e.Endpoint, Serve: func(a admin.Admin, w http.ResponseWriter, r *http.Request) error {
			return serve(&server{a: a, cfg: Config{Logger: slog.New(slog.DiscardHandler)}}, w, r)
		}})
	}
	return out
}

// Endpoints are the API's operations, as the mux serves them, for the
// OpenAPI document.
func Endpoints() []openapi.Endpoint {
	out := make([]openapi.Endpoint, len(endpoints))
	for i, e := range endpoints {
		out[i] = e.Endpoint
	}
	return out
}

// Parameters that several endpoints share.
var (
	jobID      = openapi.Param{Name: "id", Desc: "The job's id."}
	workflowID = openapi.Param{Name: "id", Desc: "The workflow's id."}
	scheduleID = openapi.Param{Name: "id", Desc: "The schedule's id."}
	route      = openapi.Param{Name: "route", Desc: "The route (queue)."}
	deadTask   = openapi.Param{Name: "task", Desc: "Only dead jobs of this task."}
	deadRoute  = openapi.Param{Name: "route", Desc: "Only dead jobs of this route."}
	// listing is what a job listing takes: the queues' states (active is
	// processing, dead is failed). Finished jobs are not listed: they are
	// results, read by id.
	listing = []openapi.Param{
		{Name: "route", Desc: "Only jobs of this route."},
		{Name: "state", Desc: "Only jobs in this state: pending (default), scheduled, processing (or active: being run) or failed (or dead: in the dead-letter queue). Completed jobs are not listed.",
			Enum: []string{"pending", "scheduled", "processing", "active", "failed", "dead"}},
		{Name: "task", Desc: "Only jobs of this task (wire name)."},
		{Name: "q", Desc: "Only jobs whose id, task, args or error contain this text."},
		{Name: "cursor", Desc: "Where the previous page ended (its next cursor)."},
		{Name: "limit", Desc: "At most this many jobs.", Kind: openapi.Integer, Min: 1, Max: 500},
		{Name: "order", Desc: "Oldest first (default) or newest first.", Enum: []string{"oldest", "newest"}},
	}
	deadListing = deadStates(listing)
	// historyParams are what a search of the task history takes.
	historyParams = []openapi.Param{
		{Name: "task", Desc: "Only ends of jobs of this task (wire name)."},
		{Name: "route", Desc: "Only ends of jobs of this route."},
		{Name: "status", Desc: "Only jobs that ended so: completed, failed (dead-lettered), canceled or expired (not started before its expiry); any when absent.",
			Enum: []string{"completed", "failed", "canceled", "expired"}, NoDefault: true},
		{Name: "since", Desc: "Only jobs that ended at or after this RFC 3339 time; without it, the 7 days before until (or before now). The page's since and until say the window searched.", Kind: openapi.DateTime},
		{Name: "until", Desc: "Only jobs that ended before this RFC 3339 time.", Kind: openapi.DateTime},
		{Name: "q", Desc: "Only jobs whose id or error contains this text: 3 characters or more."},
		{Name: "args.", Prefix: true,
			Desc: "It also takes args.<field>=value query parameters: only jobs whose args hold value at field, compared as text; a dotted path reaches into nested objects (args.customer.id=42), and several must all hold."},
		{Name: "cursor", Desc: "Where the previous page ended (its next cursor)."},
		{Name: "limit", Desc: "At most this many rows (default 50).", Kind: openapi.Integer, Min: 1, Max: 500},
	}
)

// deadStates is the listing of the dead-letter queue: failed jobs only.
func deadStates(ps []openapi.Param) []openapi.Param {
	out := append([]openapi.Param(nil), ps...)
	out[1] = openapi.Param{Name: "state", Desc: "The dead-letter queue holds failed (dead) jobs only.", Enum: []string{"failed", "dead"}}
	return out
}

// Answers that several endpoints give.
var (
	badRequest = openapi.Response{Status: http.StatusBadRequest}
	notFound   = openapi.Response{Status: http.StatusNotFound}
	// theSchedule is the answer of an endpoint that shows one schedule.
	theSchedule = openapi.Response{Status: http.StatusOK, Desc: "The schedule.", Type: bananastype.Schedule{}, Name: "Schedule"}
	conflict    = openapi.Response{Status: http.StatusConflict}
	tooLarge    = openapi.Response{Status: http.StatusRequestEntityTooLarge}
	theJob      = openapi.Response{Status: http.StatusOK, Desc: "The job.", Type: bananastype.Job{}, Name: "Job"}
	// theWorkflow is a workflow, as read after the call.
	theWorkflow = openapi.Response{Status: http.StatusOK, Desc: "The workflow.", Type: bananastype.Workflow{}, Name: "Workflow",
		Inner: map[string]string{"steps": "WorkflowStep"}}
)

// batchAnswer is an answer to a batch other than success.
func batchAnswer(status int, desc string) openapi.Response {
	return openapi.Response{Status: status, Desc: desc, Type: batchAnswerBody{}, Name: "BatchError"}
}

// endpoints is the API. Each entry is one mux route and one operation of
// the OpenAPI document. Each action names the least role that may call it
// (Role): operate for the day-to-day ones (submit, cancel, pause and resume,
// replay, run now, workflows, schedules), admin for what changes how the
// queues run or loses jobs for good (limits, shards, deleting a job, purging
// the dead-letter queue); every other endpoint needs read (Endpoint.Needs).
var endpoints = []endpoint{
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/jobs", ID: "submitJob", Tag: "jobs", Role: access.Operate, Summary: "Enqueue a job of a registered task.",
		Action: true, Body: openapi.OneSubmission, Responses: []openapi.Response{
			{Status: http.StatusCreated, Desc: "Enqueued.", Type: submitted{}, Location: true},
			{Status: http.StatusOK, Desc: "Debounced: the waiting job of the submission's unique key took its args and due time.", Type: submitted{}},
			badRequest, conflict, tooLarge}},
		(*server).submit},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/jobs/batch", ID: "submitJobs", Tag: "jobs", Role: access.Operate, Summary: "Enqueue up to 1,000 jobs at once: all of them or none.",
		Action: true, Body: openapi.Submissions, MaxBatch: admin.MaxBatch, Responses: []openapi.Response{
			{Status: http.StatusCreated, Desc: "Every job enqueued; ids in the order of jobs.", Type: batchCreated{}},
			batchAnswer(http.StatusBadRequest, "Nothing was enqueued: jobs lists every refused job (index, field, error), or field names what is wrong with the batch itself (over 1,000 jobs, an unknown key, not JSON)."),
			batchAnswer(http.StatusConflict, "Jobs of a task with a unique window duplicate jobs already enqueued: jobs lists them, and they were not enqueued again; the others were. ids has every job's id, a duplicate's the id of the job that holds its key."),
			tooLarge,
			batchAnswer(http.StatusInternalServerError, `Redis failed part-way through a batch over several routes or priorities (one call each, in the order jobs first names them): ids has the id of each job stored and "" for the others, which jobs lists; the job of the failing call may or may not be stored (GET /api/v1/jobs/{id} tells). A batch of one route and priority is stored whole or not at all.`)}},
		(*server).submitBatch},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/jobs", ID: "listJobs", Tag: "jobs", Summary: "List jobs.", Query: listing,
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "A page of jobs.", Type: bananastype.JobPage{}, Name: "JobPage",
			Inner: map[string]string{"jobs": "JobSummary"}}, badRequest}},
		(*server).jobs},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/jobs/{id}", ID: "getJob", Tag: "jobs", Summary: "A job: its state, args and result as JSON.",
		PathParams: []openapi.Param{jobID}, Responses: []openapi.Response{theJob, notFound}},
		(*server).job},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/jobs/{id}/result", ID: "getJobResult", Tag: "jobs", Summary: "Wait for a job to finish, and read it with its result.",
		PathParams: []openapi.Param{jobID},
		Query: []openapi.Param{{Name: "wait", Kind: openapi.Duration,
			Desc: "How long to wait for the job to finish: a Go duration from 0 to 5m, such as 30s (default 0: answer at once)."}},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The job has finished.", Type: bananastype.Job{}, Name: "Job"},
			{Status: http.StatusAccepted, Desc: "The job has not finished yet: ask again.", Type: bananastype.Job{}, Name: "Job"}, badRequest, notFound}},
		(*server).result},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/jobs/{id}/run", ID: "runJobNow", Tag: "jobs", Role: access.Operate, Action: true,
		Summary: "Run a scheduled job (delayed, or waiting for its retry) now: it is pending at once, its attempts as they were. A pending job is left as it is.", PathParams: []openapi.Param{jobID},
		Button: &openapi.Button{Page: openapi.JobPage, Key: "run", Label: "Run now", When: []string{"scheduled"},
			Title: "Move the job to its ready list now; its attempts stay as they are",
			Done:  "run-now", Flash: "Pending now: the job runs when a worker of its route is free."},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Pending.", Type: ranNow{}}, notFound, conflict}},
		func(s *server, w http.ResponseWriter, r *http.Request) error {
			if err := s.a.RunNow(r.Context(), r.PathValue("id")); err != nil {
				return err
			}
			return writeJSON(w, http.StatusOK, ranNow{Run: r.PathValue("id")})
		}},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/jobs/{id}/cancel", ID: "cancelJob", Tag: "jobs", Role: access.Operate, Action: true,
		Summary: "Cancel a job: one not started is not run, a running one has its context canceled.", PathParams: []openapi.Param{jobID},
		Button: &openapi.Button{Page: openapi.JobPage, Key: "cancel", Label: "Cancel", When: []string{"pending", "scheduled", "processing"},
			Done: "canceled", Flash: "Canceled: a job not started is not run; a running one stops once its worker acts."},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Canceled.", Type: admin.Canceled{}, Name: "Canceled"}, notFound, conflict}},
		(*server).cancel},
	{openapi.Endpoint{Method: "DELETE", Path: "/api/v1/jobs/{id}", ID: "deleteJob", Tag: "jobs", Role: access.Admin, Summary: "Delete a pending or scheduled job.",
		Action: true, PathParams: []openapi.Param{jobID},
		Button: &openapi.Button{Page: openapi.JobPage, Key: "delete", Label: "Delete", When: []string{"pending", "scheduled"},
			Confirm: "delete the job: it is gone for good", Danger: true, Done: "deleted", Flash: "Deleted.", Then: "/jobs", Path: "/jobs/{id}/delete"},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Deleted.", Type: deleted{}}, notFound, conflict}},
		(*server).delete},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/workflows", ID: "submitWorkflow", Tag: "workflows", Role: access.Operate,
		Summary: "Submit a workflow: steps that each start when the steps they come after completed, with their results as args; all stored, or none.",
		Action:  true, Body: openapi.WorkflowSteps, MaxBatch: admin.MaxWorkflowSteps, Responses: []openapi.Response{
			{Status: http.StatusCreated, Desc: "Submitted: the workflow's id, and each step's job id by the step's id.", Type: workflowSubmitted{}, Name: "WorkflowSubmitted", Location: true},
			badRequest, tooLarge}},
		(*server).submitWorkflow},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/workflows", ID: "listWorkflows", Tag: "workflows", Summary: "List workflows, newest first.",
		Query: []openapi.Param{
			{Name: "status", Desc: "Only workflows of this status; any when absent.", Enum: bananastype.WorkflowStatuses, NoDefault: true},
			{Name: "task", Desc: "Only workflows whose final step is of this task (wire name)."},
			{Name: "cursor", Desc: "Where the previous page ended (its next cursor)."},
			{Name: "limit", Desc: "At most this many workflows (default 50).", Kind: openapi.Integer, Min: 1, Max: 500},
		},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "A page of workflows: each without its steps and result (GET /api/v1/workflows/{id} has them).",
			Type: bananastype.WorkflowPage{}, Name: "WorkflowPage", Inner: map[string]string{"workflows": "WorkflowSummary"}}, badRequest}},
		(*server).workflows},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/workflows/{id}", ID: "getWorkflow", Tag: "workflows",
		Summary:    "A workflow: its status, its steps with their jobs, and its result once completed.",
		PathParams: []openapi.Param{workflowID}, Responses: []openapi.Response{theWorkflow, notFound}},
		(*server).workflow},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/workflows/{id}/cancel", ID: "cancelWorkflow", Tag: "workflows", Role: access.Operate, Action: true,
		Summary: "Cancel a workflow: its steps not yet run are canceled, its running steps' jobs asked to stop. A completed workflow stays completed.",
		Button: &openapi.Button{Page: openapi.WorkflowPage, Key: "cancel", Label: "Cancel", When: []string{"pending", "running"}, Danger: true,
			Title: "Cancel the steps not yet run, and ask the running ones to stop",
			Done:  "workflow-canceled", Flash: "Canceled: the steps not yet run are canceled, and the running ones asked to stop."},
		PathParams: []openapi.Param{workflowID}, Responses: []openapi.Response{theWorkflow, notFound}},
		(*server).cancelWorkflow},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/workflows/{id}/retry", ID: "retryWorkflow", Tag: "workflows", Role: access.Operate, Action: true,
		Summary: "Run a workflow's failed and canceled steps again (a dead step's job replayed, a canceled step under a new job id); its completed steps keep their results.",
		Button: &openapi.Button{Page: openapi.WorkflowPage, Key: "retry", Label: "Retry", When: []string{"retryable"},
			Title: "Run the failed and canceled steps again; completed steps keep their results",
			Done:  "workflow-retried", Flash: "Retried: the failed and canceled steps run again; the completed ones keep their results."},
		PathParams: []openapi.Param{workflowID}, Responses: []openapi.Response{theWorkflow, notFound}},
		(*server).retryWorkflow},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/workflows/{id}/signals/{name}", ID: "signalWorkflow", Tag: "workflows", Role: access.Operate, Action: true,
		Summary:    "Send a signal to a workflow: the first of its waits of that name (runtime.WaitSignal) completes with the JSON body as its result, and the steps after it start; a signal for a wait not reached yet is kept for it.",
		PathParams: []openapi.Param{workflowID, {Name: "name", Desc: "The signal's name: the name of the wait it is for."}}, Body: openapi.SignalPayload,
		Responses: []openapi.Response{{Status: http.StatusAccepted, Desc: "Taken: the wait it is for completes (or will, once reached).", Type: signalSent{}, Name: "SignalSent"},
			badRequest, notFound, conflict, tooLarge}},
		(*server).signalWorkflow},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/history", ID: "searchHistory", Tag: "history",
		Summary: "Search the task history: the jobs that ended for good (completed, failed, canceled), newest end first, kept after Redis lets them go (HISTORY_URL).",
		Query:   historyParams,
		// 404: the program keeps no task history (no HISTORY_URL). 400 also
		// for a search PostgreSQL stopped past its timeout: to narrow.
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "A page of the history, newest end first.", Type: bananastype.HistoryPage{}, Name: "HistoryPage",
			Inner: map[string]string{"jobs": "HistoryRow"}}, badRequest, notFound}},
		(*server).history},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/tasks", ID: "listTasks", Tag: "tasks", Summary: "The registered tasks, their defaults and args.",
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The tasks.", Type: admin.Task{}, List: true, Name: "Task",
			Inner: map[string]string{"cron": "CronSpec"}}}},
		(*server).tasks},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/queues", ID: "listQueues", Tag: "queues", Summary: "The routes, their depths and whether they are paused.",
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The queues.", Type: bananastype.Route{}, List: true, Name: "Queue"}}},
		(*server).queues},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/routes/{route}/pause", ID: "pauseRoute", Tag: "queues", Role: access.Operate, Action: true,
		Summary: "Pause a route: workers take no new job from it.", PathParams: []openapi.Param{route},
		Button: &openapi.Button{Page: openapi.RouteRow, Key: "pause", Label: "Pause", When: []string{"running"},
			Done: "paused", Flash: "Paused: no worker takes this route's jobs until it is resumed."},
		// 404: a route no job, registered task or live worker has; the error lists the known ones.
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Paused.", Type: paused{}}, notFound}},
		(*server).pause},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/routes/{route}/resume", ID: "resumeRoute", Tag: "queues", Role: access.Operate, Action: true,
		Summary: "Resume a paused route.", PathParams: []openapi.Param{route},
		Button: &openapi.Button{Page: openapi.RouteRow, Key: "resume", Label: "Resume", When: []string{"paused"}, Done: "resumed", Flash: "Resumed."},
		// 404: a route that is not paused and that nothing knows.
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Resumed.", Type: paused{}}, notFound}},
		(*server).resume},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/routes/{route}/cancel", ID: "cancelWaitingJobs", Tag: "queues", Role: access.Operate, Action: true,
		Summary: "Cancel every pending and scheduled job of a route, or those of one task.", PathParams: []openapi.Param{route},
		Query:     []openapi.Param{{Name: "task", Desc: "Only waiting jobs of this task."}},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Canceled.", Type: canceledCount{}}, badRequest, notFound}},
		(*server).cancelWaiting},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/routes/{route}/run-scheduled", ID: "runScheduledJobs", Tag: "queues", Role: access.Operate, Action: true,
		Summary: "Run every scheduled job of a route (delayed, or waiting for its retry), or those of one task, now: each is pending at once, its attempts as they were.", PathParams: []openapi.Param{route},
		Query: []openapi.Param{{Name: "task", Desc: "Only scheduled jobs of this task."}},
		Button: &openapi.Button{Page: openapi.RouteRow, Key: "run-scheduled", Label: "Run scheduled now",
			Title: "Move every scheduled job of the route to its ready list now; attempts stay as they are",
			Done:  "ran-scheduled", Flash: "Pending now: %s scheduled jobs.", Count: "run"},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Pending now.", Type: ranScheduled{}}, badRequest, notFound}},
		func(s *server, w http.ResponseWriter, r *http.Request) error {
			n, err := s.a.RunScheduled(r.Context(), r.PathValue("route"), r.URL.Query().Get("task"))
			if err != nil {
				return err
			}
			return writeJSON(w, http.StatusOK, ranScheduled{Route: r.PathValue("route"), Run: n})
		}},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/routes/{route}/shards", ID: "getRouteShards", Tag: "queues",
		Summary: "A route's shard count: 1 for a route never sharded.", PathParams: []openapi.Param{route},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The shard count.", Type: shardCount{}}, badRequest}},
		(*server).shards},
	{openapi.Endpoint{Method: "PUT", Path: "/api/v1/routes/{route}/shards", ID: "setRouteShards", Tag: "queues", Role: access.Admin, Action: true,
		Summary:    "Spread a route over N shards (1 to 256), each a hash tag of its own, so that its jobs fall evenly over a Redis Cluster's masters; changeable live, no job lost.",
		PathParams: []openapi.Param{route}, Body: openapi.ShardCount,
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Set.", Type: shardCount{}}, badRequest, tooLarge}},
		(*server).setShards},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/routes/{route}/limits", ID: "getRouteLimits", Tag: "queues",
		Summary: "A route's own limits (every job of the route together, on top of each task's own): null where there is none.", PathParams: []openapi.Param{route},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The limits.", Type: admin.Limits{}}, badRequest}},
		(*server).limits},
	{openapi.Endpoint{Method: "PUT", Path: "/api/v1/routes/{route}/limits", ID: "setRouteLimits", Tag: "queues", Role: access.Admin, Action: true,
		Summary:    "Change a route's own limits: max_running (jobs running at once), rate (starts per second, minute or hour) and burst; a field left out stays, null removes it. In force at every worker's next fetch.",
		PathParams: []openapi.Param{route}, Body: openapi.RouteLimits,
		Button: &openapi.Button{Page: openapi.LimitsPage, Key: "set", Label: "Set limits", Class: "limits-form",
			Fields: []openapi.Field{{Name: "max_running", Label: "Max running", Placeholder: "none", Numeric: true},
				{Name: "rate", Label: "Rate", Placeholder: "none, or 100/s, 20/m, 5/h"},
				{Name: "burst", Label: "Burst", Placeholder: "the rate's", Numeric: true}},
			Note: "An empty field removes that limit. In force at every worker's next fetch.",
			Done: "limits-set", Flash: "Limits set: every worker honours them at its next fetch."},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The limits now in force.", Type: admin.Limits{}}, badRequest, tooLarge}},
		(*server).setLimits},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/routes/{route}/flows", ID: "getRouteFlows", Tag: "queues",
		Summary: "What a route's flow control holds now: its limits and each task's, keyed jobs running and waiting, flows held back, and the busiest keys.", PathParams: []openapi.Param{route},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The route's flows.", Type: admin.Flows{}}, badRequest}},
		(*server).flows},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/dlq", ID: "listDeadJobs", Tag: "dlq", Summary: "List the dead-letter queue.", Query: deadListing,
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "A page of dead jobs.", Type: bananastype.JobPage{}, Name: "DeadJobList"}, badRequest}},
		(*server).dead},
	{openapi.Endpoint{Method: "DELETE", Path: "/api/v1/dlq", ID: "purgeDeadJobs", Tag: "dlq", Role: access.Admin, Action: true,
		Summary: "Delete dead jobs for good: all of them, or those of one route or task.",
		Button: &openapi.Button{Page: openapi.RouteRow, Key: "purge", Label: "Purge failed", When: []string{"dead"}, Danger: true,
			Confirm: "purge: the failed jobs are deleted for good", Path: "/routes/{route}/purge-dead",
			Done: "purged", Flash: "Purged %s failed jobs from the dead-letter queue.", Count: "purged"},
		Query: []openapi.Param{deadRoute, deadTask, {Name: "older_than", Kind: openapi.Duration,
			Desc: "Only dead jobs that died longer ago than this Go duration, such as 24h."}},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Purged.", Type: purged{}}, badRequest}},
		(*server).purgeDead},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/dlq/{id}/replay", ID: "replayDeadJob", Tag: "dlq", Role: access.Operate, Action: true,
		Summary: "Enqueue a dead job again.", PathParams: []openapi.Param{jobID},
		Button: &openapi.Button{Page: openapi.JobPage, Key: "replay", Label: "Replay", When: []string{"failed"}, Path: "/jobs/{id}/replay",
			Done: "replayed", Flash: "Replayed: the job is pending again with its attempts reset."},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Replayed.", Type: replayed{}}, notFound}},
		(*server).replay},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/dlq/replay", ID: "replayDeadJobs", Tag: "dlq", Role: access.Operate, Action: true,
		Summary: "Enqueue dead jobs again: all of them, or those of one route or task.", Query: []openapi.Param{deadRoute, deadTask},
		Button: &openapi.Button{Page: openapi.DeadList, Key: "replay-dead", Label: "Replay every failed job of {route}",
			Confirm: "replay every failed job of the route", Path: "/routes/{route}/replay-dead",
			Done: "replayed-dead", Flash: "Replayed %s failed jobs: they are pending again with their attempts reset.", Count: "replayed"},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Replayed.", Type: replayedCount{}}, badRequest}},
		(*server).replayDead},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/cron", ID: "listCron", Tag: "cron", Summary: "The cron entries, their last and next runs.",
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The cron entries.", Type: bananastype.Schedule{}, List: true, Name: "Schedule"}}},
		(*server).cron},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/cron/{name}/run", ID: "runCron", Tag: "cron", Role: access.Operate, Action: true,
		Summary:    "Run a cron entry now: enqueue one job of its task (zero args, its route and priority); its schedule is left as it is.",
		PathParams: []openapi.Param{{Name: "name", Desc: "The cron entry's name: its task's wire name."}},
		Button: &openapi.Button{Page: openapi.CronRow, Key: "run", Label: "Run now", Title: "Enqueue one job of the entry now; the schedule stays as it is",
			Then: openapi.ThenLocation, Done: "cron-run", Flash: "Enqueued now, outside the schedule: the entry's next run stays as planned."},
		Responses: []openapi.Response{{Status: http.StatusCreated, Desc: "Enqueued.", Type: submitted{}, Location: true}, notFound, conflict}},
		(*server).runCron},
	// Schedules made at run time (schedules.go); the listing shows the
	// program's cron entries too (source "code").
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/schedules", ID: "listSchedules", Tag: "schedules",
		Summary:   "The schedules: those made at run time (source data), then the program's cron entries (source code).",
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The schedules.", Type: bananastype.Schedule{}, List: true, Name: "Schedule"}}},
		(*server).schedules},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/schedules/{id}", ID: "getSchedule", Tag: "schedules", Summary: "A schedule: made at run time, or a cron entry of the program (source code).",
		PathParams: []openapi.Param{scheduleID}, Responses: []openapi.Response{theSchedule, badRequest, notFound}},
		(*server).schedule},
	{openapi.Endpoint{Method: "PUT", Path: "/api/v1/schedules/{id}", ID: "putSchedule", Tag: "schedules", Role: access.Operate, Action: true,
		Summary:    "Create a schedule or change it: a job of task name with args at each tick of cron; one job per tick however many schedulers run.",
		PathParams: []openapi.Param{scheduleID}, Body: openapi.ScheduleDef,
		Responses: []openapi.Response{theSchedule, badRequest, conflict, tooLarge}},
		(*server).putSchedule},
	{openapi.Endpoint{Method: "DELETE", Path: "/api/v1/schedules/{id}", ID: "deleteSchedule", Tag: "schedules", Role: access.Operate, Action: true,
		Summary: "Delete a schedule made at run time: it fires nothing more.", PathParams: []openapi.Param{scheduleID},
		Button:    &openapi.Button{Page: openapi.ScheduleRow, Key: "delete", Label: "Delete", When: []string{"data"}, Danger: true, Confirm: "delete the schedule: it fires nothing more", Path: "/schedules/{id}/delete", Done: "schedule-deleted", Flash: "Deleted: the schedule fires nothing more."},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "Deleted.", Type: scheduleDeleted{}}, badRequest, notFound, conflict}},
		(*server).deleteSchedule},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/schedules/{id}/pause", ID: "pauseSchedule", Tag: "schedules", Role: access.Operate, Action: true,
		Summary: "Pause a schedule (or a cron entry of the program): it fires nothing on any scheduler, and keeps its next tick.", PathParams: []openapi.Param{scheduleID},
		Button:    &openapi.Button{Page: openapi.ScheduleRow, Key: "pause", Label: "Pause", When: []string{"active"}, Done: "schedule-paused", Flash: "Paused: the schedule fires nothing and keeps its next tick."},
		Responses: []openapi.Response{theSchedule, badRequest, notFound, conflict}},
		(*server).pauseSchedule},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/schedules/{id}/resume", ID: "resumeSchedule", Tag: "schedules", Role: access.Operate, Action: true,
		Summary: "Resume a schedule (or a cron entry of the program) from its next tick.", PathParams: []openapi.Param{scheduleID},
		Button:    &openapi.Button{Page: openapi.ScheduleRow, Key: "resume", Label: "Resume", When: []string{"paused"}, Done: "schedule-resumed", Flash: "Resumed: the schedule fires from its next tick."},
		Responses: []openapi.Response{theSchedule, badRequest, notFound, conflict}},
		(*server).resumeSchedule},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/schedules/{id}/run", ID: "runSchedule", Tag: "schedules", Role: access.Operate, Action: true,
		Summary: "Run a schedule now: enqueue one job of its task with its args (a cron entry of the code: zero args); its ticks are left as they are.", PathParams: []openapi.Param{scheduleID},
		Button:    &openapi.Button{Page: openapi.ScheduleRow, Key: "run", Label: "Run now", Title: "Enqueue one job of the schedule now; its ticks stay as they are", Then: openapi.ThenLocation, Done: "schedule-run", Flash: "Enqueued now, outside the schedule: its next tick stays as planned."},
		Responses: []openapi.Response{{Status: http.StatusCreated, Desc: "Enqueued.", Type: submitted{}, Location: true}, badRequest, notFound, conflict}},
		(*server).runSchedule},
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/schedules/{id}/backfill", ID: "backfillSchedule", Tag: "schedules", Role: access.Operate, Action: true,
		Summary:    "Enqueue the job of each tick of a range before the schedule's next tick, oldest first, each once even if asked twice.",
		PathParams: []openapi.Param{scheduleID}, Body: openapi.TimeRange,
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The jobs this call enqueued.", Type: backfilled{}}, badRequest, notFound}},
		(*server).backfillSchedule},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/workers", ID: "listWorkers", Tag: "workers", Summary: "The live workers and schedulers, from their heartbeats.",
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The workers.", Type: admin.Worker{}, List: true, Name: "Worker"}}},
		(*server).workers},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/stats", ID: "getStats", Tag: "stats", Summary: "Counts of jobs per minute over a window.",
		Query: []openapi.Param{{Name: "window", Desc: "The window: the last hour (default) or day.", Enum: []string{"1h", "24h"}}},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The per-minute stats series.", Type: admin.Stats{}, Name: "Stats",
			Inner: map[string]string{"points": "StatsPoint"}}, badRequest}},
		(*server).stats},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/openapi.json", ID: "getOpenAPI", Tag: "meta", Summary: "This document.",
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "The OpenAPI 3.1 document.", Type: map[string]any{}}}},
		(*server).openAPI},
	{openapi.Endpoint{Method: "GET", Path: "/api/v1/audit", ID: "listAudit", Tag: "audit",
		Summary: "The audit log: the actions operators took through the API, the dashboard or the command line (who, what, target, when, outcome), newest first; Redis keeps the most recent 10,000.",
		Query: []openapi.Param{
			{Name: "cursor", Desc: "Where the previous page ended (its next cursor)."},
			{Name: "limit", Desc: "At most this many entries (default 50).", Kind: openapi.Integer, Min: 1, Max: 500},
		},
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "A page of the audit log, newest first.", Type: bananastype.AuditPage{}, Name: "AuditPage",
			Inner: map[string]string{"entries": "AuditEntry"}}, badRequest}},
		(*server).audit},
	// `app keys rotate` over the API: the admin role's, as it rewrites every
	// waiting job (keys.go).
	{openapi.Endpoint{Method: "POST", Path: "/api/v1/keys/rotate", ID: "rotateKeys", Tag: "keys", Role: access.Admin, Action: true,
		Summary:   "Reseal the args of every waiting and scheduled job, and of every schedule, under the newest key of the server's BANANAS_KEYS (newest first), as `app keys rotate` does; drop an old key once a rotation reports 0 resealed and 0 left alone. It takes no body; a server without keys answers 400 naming BANANAS_KEYS.",
		Responses: []openapi.Response{{Status: http.StatusOK, Desc: "What the rotation did.", Type: queue.ResealCount{}, Name: "KeyRotation"}, badRequest}},
		(*server).rotateKeys},
	// Liveness needs nothing; readiness needs Redis. Neither needs the
	// token: probes carry none.
	{openapi.Endpoint{Method: "GET", Path: "/healthz", ID: "healthz", Tag: "meta", Summary: "Readiness: whether the server reaches Redis.",
		Public: true, Responses: probeAnswers},
		(*server).healthz},
	{openapi.Endpoint{Method: "GET", Path: "/livez", ID: "livez", Tag: "meta", Summary: "Liveness: whether the server answers.",
		Public: true, Responses: probeAnswers},
		(*server).livez},
}

var probeAnswers = []openapi.Response{
	{Status: http.StatusOK, Desc: "Up.", Type: probeStatus{}},
	{Status: http.StatusServiceUnavailable, Desc: "Down.", Type: probeStatus{}},
}

// ranNow is the answer of POST /api/v1/jobs/{id}/run.
type ranNow struct {
	Run string `json:"run"`
}

// canceledCount is the answer of POST /api/v1/routes/{route}/cancel.
type canceledCount struct {
	Route    string `json:"route"`
	Canceled int    `json:"canceled"`
}

func (s *server) cancelWaiting(w http.ResponseWriter, r *http.Request) error {
	n, err := s.a.CancelWaiting(r.Context(), r.PathValue("route"), r.URL.Query().Get("task"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, canceledCount{Route: r.PathValue("route"), Canceled: n})
}

// ranScheduled is the answer of POST /api/v1/routes/{route}/run-scheduled.
type ranScheduled struct {
	Route string `json:"route"`
	Run   int    `json:"run"`
}

// shardCount is the answer of GET and PUT /api/v1/routes/{route}/shards.
type shardCount struct {
	Route  string `json:"route"`
	Shards int    `json:"shards"`
}

func (s *server) shards(w http.ResponseWriter, r *http.Request) error {
	n, err := s.a.Shards(r.Context(), r.PathValue("route"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, shardCount{Route: r.PathValue("route"), Shards: n})
}

// setShards reads {"shards": N}; the admin layer checks N's range.
func (s *server) setShards(w http.ResponseWriter, r *http.Request) error {
	body, err := objectBody(r)
	if err != nil {
		return err
	}
	for k := range body {
		if k != "shards" {
			return BadRequest(k, "unknown field %q (want shards)", k)
		}
	}
	raw, ok := body["shards"]
	if !ok {
		return BadRequest("shards", `shards is missing: want {"shards": N}, N from 1 to 256`)
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		return BadRequest("shards", "shards: want a whole number from 1 to 256, got JSON %s", clip(raw))
	}
	if err := s.a.SetShards(r.Context(), r.PathValue("route"), n); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, shardCount{Route: r.PathValue("route"), Shards: n})
}

func (s *server) limits(w http.ResponseWriter, r *http.Request) error {
	l, err := s.a.Limits(r.Context(), r.PathValue("route"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, l)
}

func (s *server) flows(w http.ResponseWriter, r *http.Request) error {
	f, err := s.a.Flows(r.Context(), r.PathValue("route"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, f)
}

// setLimits reads {"max_running": N|null, "rate": "N/s"|null, "burst":
// M|null}: a field left out stays as it is, null removes it; the admin
// layer checks each value.
func (s *server) setLimits(w http.ResponseWriter, r *http.Request) error {
	body, err := objectBody(r)
	if err != nil {
		return err
	}
	var p admin.LimitsPatch
	for k, raw := range body {
		var v *string
		var err error
		switch k {
		case "max_running", "burst":
			v, err = countOrNull(k, raw)
		case "rate":
			v, err = rateOrNull(raw)
		default:
			return BadRequest(k, "unknown field %q (want max_running, rate or burst)", k)
		}
		if err != nil {
			return err
		}
		switch k {
		case "max_running":
			p.MaxRunning = v
		case "burst":
			p.Burst = v
		default:
			p.Rate = v
		}
	}
	l, err := s.a.SetLimits(r.Context(), r.PathValue("route"), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, l)
}

// countOrNull reads a whole number, or null (""), of a limits body.
func countOrNull(field string, raw json.RawMessage) (*string, error) {
	none := ""
	if string(raw) == "null" {
		return &none, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
		return nil, BadRequest(field, "%s: want a whole number from 1 to 1000000000, or null to remove it, got JSON %s", field, clip(raw))
	}
	v := strconv.FormatInt(n, 10)
	return &v, nil
}

// rateOrNull reads "N/s", "N/m", "N/h", or null (""), of a limits body.
func rateOrNull(raw json.RawMessage) (*string, error) {
	none := ""
	if string(raw) == "null" {
		return &none, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil || v == "" {
		return nil, BadRequest("rate", `rate: want "N/s", "N/m" or "N/h", or null to remove it, got JSON %s`, clip(raw))
	}
	return &v, nil
}

// objectBody reads a request body that is one JSON object, field by field.
func objectBody(r *http.Request) (map[string]json.RawMessage, error) {
	var body map[string]json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&body); err != nil {
		return nil, bodyError(err)
	}
	if dec.More() {
		return nil, BadRequest("", "the body holds more than one JSON value")
	}
	return body, nil
}
