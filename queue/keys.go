package queue

import (
	"strconv"
	"strings"
)

// Priority orders jobs within a route: every high job is taken before any
// normal one, every normal before any low. runtime.Priority is this type.
type Priority string

// Priorities in the strict order a worker drains them.
const (
	High   Priority = "high"
	Normal Priority = "normal"
	Low    Priority = "low"
)

// Priorities lists every priority, highest first.
var Priorities = []Priority{High, Normal, Low}

// MarshalBinary writes p as its name, so a Priority can be a Redis command's
// argument as a string is.
func (p Priority) MarshalBinary() ([]byte, error) { return []byte(p), nil }

// ValidPriority reports whether p names a priority.
func ValidPriority[S ~string](p S) bool { return p == S(High) || p == S(Normal) || p == S(Low) }

// Keys builds the names of one route's keys. Every key of a route carries the
// route as its hash tag ({route}), so a script that touches them all runs on a
// single Redis Cluster slot.
type Keys struct {
	ns    string
	route string
	base  string // ns:route:{route}:
}

// RouteKeys returns the keys of route under namespace ns.
func RouteKeys(ns, route string) Keys {
	return Keys{ns: ns, route: route, base: ns + ":route:{" + route + "}:"}
}

func (k Keys) Route() string                 { return k.route }
func (k Keys) List(priority Priority) string { return k.base + "queue:" + string(priority) }
func (k Keys) Job(id string) string          { return k.base + "job:" + id }
func (k Keys) Result(id string) string       { return k.base + "result:" + id }
func (k Keys) Unique(key string) string      { return k.base + "unique:" + key }

// Cron is the state hash of cron entry name of the route.
func (k Keys) Cron(name string) string { return k.base + "cron:" + name }

// ScheduleTick is the last tick of schedule id (package scheduler's
// schedules) whose job was enqueued on the route: the compare-and-set that
// makes a tick's job one job, in the slot the job is written to.
func (k Keys) ScheduleTick(id string) string { return k.base + "schedtick:" + id }
func (k Keys) Active() string                { return k.base + "active" }
func (k Keys) Leases() string                { return k.base + "leases" }
func (k Keys) Scheduled() string             { return k.base + "scheduled" }
func (k Keys) Dead() string                  { return k.base + "dead" }
func (k Keys) Stats() string                 { return k.base + "stats" }

// Ended is the LIST of the records of jobs that ended for good (completed,
// dead, canceled) and wait to be stored in the task history, oldest first
// (see ended.go).
func (k Keys) Ended() string { return k.base + "ended" }

// Payloads is the hash of light jobs' payloads (id -> payload): a job enqueued
// ready to run lives there, not in a hash of its own, until it finishes or fails.
func (k Keys) Payloads() string { return k.base + "payloads" }

// Receipt holds the reply of one enqueue call that had a caller-chosen id, for
// a retry of that call to answer from (see scripts/enqueue.lua).
func (k Keys) Receipt(call string) string { return k.base + "receipt:" + call }

// Groups counts the jobs still leased by each lease group (fetch call):
// token -> count. The active set holds the groups' deadlines.
func (k Keys) Groups() string { return k.base + "groups" }

// Paused exists while the route is paused: fetch and claim take nothing from
// it, in every process, while enqueue goes on.
func (k Keys) Paused() string { return k.base + "paused" }

// Cancels is the set of ids of the route's running jobs whose cancellation
// was asked for: the worker holding one cancels its context and finishes it
// as canceled (no retry).
func (k Keys) Cancels() string { return k.base + "cancels" }

// CancelChannel is published with the id of a running job whose cancellation
// was asked for, so the worker holding it acts at once; Cancels is the record
// a worker that missed the message finds at its next lease renewal.
func (k Keys) CancelChannel() string { return k.ns + ":cancel:{" + k.route + "}" }

// Series holds the route's stats series for the hour starting at unix second
// hour (a multiple of 3600): per-minute counts and time buckets, kept 25
// hours; see series.go for its fields. The key keeps the name "history:"
// that deployments already hold, so that an upgrade keeps their last 25 h of
// charts; it is not the task history (package history).
func (k Keys) Series(hour int64) string { return k.base + "history:" + strconv.FormatInt(hour, 10) }

// Lists returns the ready lists of the given priorities, in drain order.
func (k Keys) Lists(priorities []Priority) []string {
	out := make([]string, 0, len(priorities))
	for _, p := range Priorities {
		for _, want := range priorities {
			if want == p {
				out = append(out, k.List(p))
			}
		}
	}
	return out
}

// Idle is the set of the route's waiting workers: each one's wake channel
// (WakeChannelOf) -> until when the entry holds (ms). A fetch that takes
// fewer jobs than it asked for registers its worker; whatever makes jobs
// ready pops as many entries as it made jobs and wakes each on its own
// channel, so a push wakes at most as many workers as it has jobs.
func (k Keys) Idle() string { return k.base + "idle" }

// Keeper is the route's keeper lock (keep.lua, scheduler.Keeper): the token
// of the one process that promotes, reaps and purges the route, with its ttl.
func (k Keys) Keeper() string { return k.base + "keeper" }

// KeeperChannel is published when the route's keeper gives its lock up:
// the processes that stand by for it try to take it at once.
func (k Keys) KeeperChannel() string { return k.ns + ":keeper:{" + k.route + "}" }

// WakeChannelOf is the channel on which worker (its id) is woken when a job
// of the route is made ready while it waits in the idle set.
func (k Keys) WakeChannelOf(worker string) string {
	return k.ns + ":wake:{" + k.route + "}:" + worker
}

// WakeChannel, for workers that take only some of the route's tasks (they
// cannot stand in the idle set: a job they do not run would wake them
// instead of a worker that does), is published when a ready list of the route goes from empty to
// non-empty; idle workers of the route listen on it instead of polling.
func (k Keys) WakeChannel() string { return k.ns + ":wake:{" + k.route + "}" }

// RoutesKey is the SET of the routes jobs were enqueued to, less those
// PruneRoutes removed as idle.
func RoutesKey(ns string) string { return ns + ":routes" }

// WorkersKey is the ZSET of live workers: id -> last heartbeat (ms).
func WorkersKey(ns string) string { return ns + ":workers" }

// WorkerKey is worker id's last heartbeat state (opaque bytes), with a TTL.
func WorkerKey(ns, id string) string { return ns + ":worker:" + id }

// ScheduleChannel is published with the run-at (unix ms) of a newly scheduled
// job, so a promoter sleeping until its next due job can wake earlier.
func ScheduleChannel(ns string) string { return ns + ":schedule" }

// ResultChannel is the pub/sub channel on which the result record of id is
// announced (ack.lua builds it from resultChannelPrefix).
func ResultChannel(ns, id string) string { return resultChannelPrefix(ns) + id + "}" }

func resultChannelPrefix(ns string) string { return ns + ":result:{" }

// ValidNamespace reports whether ns can prefix keys: non-empty, without spaces or
// the braces that would break hash tags.
func ValidNamespace(ns string) bool {
	return ns != "" && len(ns) <= 64 && !strings.ContainsAny(ns, "{} \t\r\n")
}

// Flow control (limits.go, flow.go). A flow is the jobs of one task and one
// key (the key "" when the task is limited but not keyed); its jobs wait in
// the route's keyed sets rather than its ready lists, so that a flow held
// back by a limit holds back nobody else.

// Limits is the HASH of the route's limits: "route" -> the route's own,
// "t:<task>" -> a task's, each "max rate period-ms burst".
func (k Keys) Limits() string { return k.base + "limits" }

// Keyed is the ZSET of the route's waiting keyed jobs of one priority, all
// scores 0, ordered by member: the flow, then its order of arrival, then
// the id (see flow.go), so that a flow's jobs are a range of it.
func (k Keys) Keyed(priority Priority) string { return k.base + "keyed:" + string(priority) }

// Ring is the LIST of the flows that have jobs waiting at one priority and
// may start one now, served round-robin.
func (k Keys) Ring(priority Priority) string { return k.base + "ring:" + string(priority) }

// Flows is the HASH of the state of every flow that has jobs waiting or
// running: flow -> its rings, waiting count, rate state and running jobs.
func (k Keys) Flows() string { return k.base + "flows" }

// Held is the ZSET of flows held back by a limit: flow -> when to look at it
// again (ms).
func (k Keys) Held() string { return k.base + "held" }

// FlowOf is the HASH of every keyed job waiting or running: id -> its member
// in the keyed set, which names its flow.
func (k Keys) FlowOf() string { return k.base + "flowof" }

// WorkflowKey is the record of workflow id, under the workflow's own hash
// tag. The workflows' keys are named here, beside every other key of the
// namespace; their records and scripts are the workflows' store's
// (runtime/internal/workflows/redisstore).
func WorkflowKey(ns, id string) string { return ns + ":workflow:{" + id + "}" }

// WorkflowChannel is where the end of workflow id is announced.
func WorkflowChannel(ns, id string) string { return ns + ":workflow:{" + id + "}" }

// WorkflowIndex is the zset of the workflows their keeper watches: id ->
// when it looks at it next (ms).
func WorkflowIndex(ns string) string { return ns + ":workflows" }

// WorkflowList is the zset of every workflow whose record may still exist:
// id -> when it was submitted (ms). wf_submit.lua adds to it (on a cluster,
// where the list lives on another node than the record, the workflows'
// store does, just before); the store's List and PruneList drop the
// entries whose record is gone (expired: a day after a workflow completed,
// a week after it failed or was canceled), so it holds about as many
// entries as there are records.
func WorkflowList(ns string) string { return ns + ":workflows:all" }

// Expiry is the route's expiry set: id -> when the job expires (ms), for
// each job enqueued with an expiry (NewJob.ExpireAt) that has not started
// yet (expire.go).
func (k Keys) Expiry() string { return k.base + "expiry" }

// AuditLog is the ZSET of the most recent audit entries (entry JSON -> when,
// unix microseconds), capped at AuditCap (audit.go). One key for the
// namespace: an action is rare, and a page of the log is one read.
func AuditLog(ns string) string { return ns + ":audit" }
