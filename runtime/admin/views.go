package admin

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/bananastype"
)

// Field describes one field of a task's arguments, for people and tools.
type Field struct {
	Name string `json:"name"`           // Go field name
	JSON string `json:"json,omitempty"` // key in JSON input, if it differs
	Type string `json:"type"`           // Go type, as written
}

// CronSpec is when a cron entry fires.
type CronSpec struct {
	Spec string `json:"spec"` // five cron fields, or a descriptor such as @every 1s
	TZ   string `json:"tz,omitempty"`
}

// Task describes a registered task: its wire name, its defaults and its
// arguments (GET /api/v1/tasks, `tasks`).
type Task struct {
	Name      string
	Route     string
	Priority  Priority
	Retries   int
	Timeout   time.Duration // 0: the worker's default
	Unique    time.Duration
	ResultTTL time.Duration
	Backoff   time.Duration // the first retry's delay; 0: the worker's Backoff
	ArgsType  string
	Args      []Field
	Result    string
	Cron      *CronSpec // nil: the task has no cron entry
	// Flow control: the args path a job's key is read from ("" when the
	// task's jobs are not keyed by their args; "func" for a key function
	// that names no path), and the limits per key.
	Key        string
	MaxRunning int    // 0: no cap
	Rate       string // "N/s", "N/m" or "N/h"; "": no rate
	Burst      int    // 0: the rate's N
	// KeepsNothing: result_ttl=0, a completed job leaves no record (Job
	// and a wait begun after it answer ErrJobNotFound).
	KeepsNothing bool
	// OnBusy is the keyed task's policy for a busy key (on_busy=):
	// "cancel_running" or "drop"; "" waits. Expire is how long after its
	// enqueue a job that has not started expires (expire=); 0: never.
	OnBusy string
	Expire time.Duration
}

func (t Task) MarshalJSON() ([]byte, error) { return json.Marshal(t.wire()) }

// WireType is the value whose JSON shape the task writes.
func (Task) WireType() any { return taskWire{} }

type taskWire struct {
	Name       string    `json:"name"`
	Route      string    `json:"route"`
	Priority   Priority  `json:"priority"`
	MaxRetries int       `json:"max_retries"`
	TimeoutMS  int64     `json:"timeout_ms"`
	UniqueMS   int64     `json:"unique_ms,omitempty"`
	BackoffMS  int64     `json:"backoff_ms,omitempty"`
	ArgsType   string    `json:"args_type,omitempty"`
	Args       []Field   `json:"args"`
	Result     string    `json:"result,omitempty"`
	Cron       *CronSpec `json:"cron,omitempty"`
	Key        string    `json:"key,omitempty"`
	MaxRunning int       `json:"max_running,omitempty"`
	Rate       string    `json:"rate,omitempty"`
	Burst      int       `json:"burst,omitempty"`
	// KeepsNothing: the task's completed jobs leave no record (result_ttl=0).
	KeepsNothing bool   `json:"keeps_nothing,omitempty"`
	OnBusy       string `json:"on_busy,omitempty"`
	ExpireMS     int64  `json:"expire_ms,omitempty"`
}

func (t Task) wire() taskWire {
	w := taskWire{Name: t.Name, Route: t.Route, Priority: t.Priority, MaxRetries: t.Retries, TimeoutMS: t.Timeout.Milliseconds(),
		UniqueMS: t.Unique.Milliseconds(), BackoffMS: t.Backoff.Milliseconds(), ArgsType: t.ArgsType, Args: t.Args, Result: t.Result,
		Cron: t.Cron, Key: t.Key, MaxRunning: t.MaxRunning, Rate: t.Rate, Burst: t.Burst, KeepsNothing: t.KeepsNothing}
	if w.Args == nil {
		w.Args = []Field{}
	}
	w.OnBusy, w.ExpireMS = t.OnBusy, t.Expire.Milliseconds()
	return w
}

// Worker is one live worker, as its heartbeat describes it. Its JSON is
// also the heartbeat record that workers write to Redis, so its keys are
// read by workers of other versions: add keys, never rename them.
type Worker struct {
	ID         string     `json:"id"`
	Host       string     `json:"host"`
	PID        int        `json:"pid"`
	Mode       string     `json:"mode,omitempty"`
	Routes     []string   `json:"routes"`
	Priorities []Priority `json:"priorities"`
	JobTypes   []string   `json:"job_types,omitempty"`
	// CronRoutes are the routes the worker's cron entries fire to.
	CronRoutes  []string  `json:"cron_routes,omitempty"`
	Concurrency int       `json:"concurrency"`
	InFlight    int       `json:"in_flight"`
	Started     time.Time `json:"started"`
	LastBeat    time.Time `json:"last_beat"`
	// Tasks are the names of the tasks the worker registers and runs (none
	// for a scheduler, which runs no jobs): the schedules listing marks a
	// schedule whose task no live worker registers.
	Tasks []string `json:"tasks,omitempty"`
}

// StatsPoint is one minute of the stats series, summed across every route.
type StatsPoint struct {
	At                                                   time.Time // start of the minute
	Enqueued, Processed, Failed, Retried, Dead, Canceled int64
	// Percentiles of the minute's waits (enqueue, or due time, to start) and
	// run times, read from power-of-two buckets: each is the upper bound of
	// its bucket, at most twice the true value; 0 when nothing started or ran.
	WaitP50, WaitP99, RunP50, RunP99 time.Duration
}

// Stats is the per-minute stats series of a window, oldest minute first, every
// minute present.
type Stats struct {
	Window time.Duration
	Points []StatsPoint
}

func (s Stats) MarshalJSON() ([]byte, error) { return json.Marshal(s.wire()) }

// WireType is the value whose JSON shape the stats write.
func (Stats) WireType() any { return statsWire{} }

type statsWire struct {
	WindowMS int64       `json:"window_ms"`
	Points   []pointWire `json:"points"`
}

type pointWire struct {
	At        bananastype.Time `json:"at"`
	Enqueued  int64            `json:"enqueued"`
	Processed int64            `json:"processed"`
	Failed    int64            `json:"failed"`
	Retried   int64            `json:"retried"`
	Dead      int64            `json:"dead"`
	Canceled  int64            `json:"canceled"`
	WaitP50MS int64            `json:"wait_p50_ms"`
	WaitP99MS int64            `json:"wait_p99_ms"`
	RunP50MS  int64            `json:"run_p50_ms"`
	RunP99MS  int64            `json:"run_p99_ms"`
}

func (s Stats) wire() statsWire {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return statsWire{WindowMS: s.Window.Milliseconds(), Points: Map(s.Points, func(p StatsPoint) pointWire {
		return pointWire{At: bananastype.Time(p.At), Enqueued: p.Enqueued, Processed: p.Processed, Failed: p.Failed, Retried: p.Retried,
			Dead: p.Dead, Canceled: p.Canceled, WaitP50MS: ms(p.WaitP50), WaitP99MS: ms(p.WaitP99), RunP50MS: ms(p.RunP50), RunP99MS: ms(p.RunP99)}
	})}
}
