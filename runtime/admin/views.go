package admin

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/bananastype"
)

// Route is one route's depths and state: `queues`, GET /api/v1/queues and
// the dashboard's overview.
type Route struct {
	Route             string
	High, Normal, Low int64 // pending, by priority
	Scheduled         int64
	Active            int64
	Dead              int64
	Paused            bool
	OldestPending     time.Time // created time of the oldest pending job; zero when none
	OldestPendingAge  time.Duration
	Workers           int // live workers (from heartbeats) that take the route
	// HistoryBacklog is how many ended jobs wait in Redis to be written to
	// the task history: 0 when none is kept, or when it keeps up.
	HistoryBacklog int64
	// Flow control (docs/FLOW-CONTROL.md): keys held back by their rate
	// now, times a key was held back by its cap or rate, keyed jobs running.
	HeldKeys, Throttled, LimitRunning int64
}

// Pending is the route's ready jobs of every priority.
func (r Route) Pending() int64 { return r.High + r.Normal + r.Low }

func (r Route) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }

// WireType is the value whose JSON shape the route writes.
func (Route) WireType() any { return routeWire{} }

type routeWire struct {
	Route            string           `json:"route"`
	High             int64            `json:"high"`
	Normal           int64            `json:"normal"`
	Low              int64            `json:"low"`
	Pending          int64            `json:"pending"`
	Scheduled        int64            `json:"scheduled"`
	Active           int64            `json:"active"`
	Dead             int64            `json:"dead"`
	Paused           bool             `json:"paused"`
	OldestPendingAt  bananastype.Time `json:"oldest_pending_at"`
	OldestPendingAge int64            `json:"oldest_pending_age_ms"`
	Workers          int              `json:"workers"`
	HistoryBacklog   int64            `json:"history_backlog,omitempty"` // ended jobs waiting for the task history
	HeldKeys         int64            `json:"held_keys,omitempty"`       // keys held back by their rate now
	Throttled        int64            `json:"throttled,omitempty"`       // times a key was held back by its cap or rate
	LimitRunning     int64            `json:"limit_running,omitempty"`   // keyed jobs running
}

func (r Route) wire() routeWire {
	w := routeWire{Route: r.Route, High: r.High, Normal: r.Normal, Low: r.Low, Pending: r.Pending(), Scheduled: r.Scheduled,
		Active: r.Active, Dead: r.Dead, Paused: r.Paused, OldestPendingAt: bananastype.Time(r.OldestPending), Workers: r.Workers, HistoryBacklog: r.HistoryBacklog,
		HeldKeys: r.HeldKeys, Throttled: r.Throttled, LimitRunning: r.LimitRunning}
	if !r.OldestPending.IsZero() {
		w.OldestPendingAge = r.OldestPendingAge.Milliseconds()
	}
	return w
}

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
	KeepsNothing bool `json:"keeps_nothing,omitempty"`
}

func (t Task) wire() taskWire {
	w := taskWire{Name: t.Name, Route: t.Route, Priority: t.Priority, MaxRetries: t.Retries, TimeoutMS: t.Timeout.Milliseconds(),
		UniqueMS: t.Unique.Milliseconds(), BackoffMS: t.Backoff.Milliseconds(), ArgsType: t.ArgsType, Args: t.Args, Result: t.Result,
		Cron: t.Cron, Key: t.Key, MaxRunning: t.MaxRunning, Rate: t.Rate, Burst: t.Burst, KeepsNothing: t.KeepsNothing}
	if w.Args == nil {
		w.Args = []Field{}
	}
	return w
}

// CronEntry is a cron entry with its state in Redis: `cron list`,
// GET /api/v1/cron, the dashboard's cron page.
type CronEntry struct {
	Name     string // the task's wire name
	Route    string
	Priority Priority
	Spec     string
	TZ       string
	LastRun  time.Time
	NextRun  time.Time
	RunCount int64
	LastJob  string
	// LastError is the scheduler's last error, or else the failure of the
	// entry's last job.
	LastError string
}

func (c CronEntry) MarshalJSON() ([]byte, error) { return json.Marshal(c.wire()) }

// WireType is the value whose JSON shape the entry writes.
func (CronEntry) WireType() any { return cronWire{} }

type cronWire struct {
	Name      string           `json:"name"`
	Route     string           `json:"route"`
	Priority  Priority         `json:"priority"`
	Spec      string           `json:"spec"`
	TZ        string           `json:"tz,omitempty"`
	LastRun   bananastype.Time `json:"last_run"`
	NextRun   bananastype.Time `json:"next_run"`
	RunCount  int64            `json:"run_count"`
	LastJob   string           `json:"last_job,omitempty"`
	LastError string           `json:"last_error,omitempty"`
}

func (c CronEntry) wire() cronWire {
	return cronWire{Name: c.Name, Route: c.Route, Priority: c.Priority, Spec: c.Spec, TZ: c.TZ,
		LastRun: bananastype.Time(c.LastRun), NextRun: bananastype.Time(c.NextRun), RunCount: c.RunCount, LastJob: c.LastJob, LastError: c.LastError}
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

// UnmarshalJSON reads the entry as MarshalJSON writes it, so that a Go
// client of the API or of `cron list --json` reads it back.
func (c *CronEntry) UnmarshalJSON(data []byte) error {
	var w cronWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*c = CronEntry{Name: w.Name, Route: w.Route, Priority: w.Priority, Spec: w.Spec, TZ: w.TZ, LastRun: time.Time(w.LastRun),
		NextRun: time.Time(w.NextRun), RunCount: w.RunCount, LastJob: w.LastJob, LastError: w.LastError}
	return nil
}

// UnmarshalJSON reads the route as MarshalJSON writes it.
func (r *Route) UnmarshalJSON(data []byte) error {
	var w routeWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Route{Route: w.Route, High: w.High, Normal: w.Normal, Low: w.Low, Scheduled: w.Scheduled, Active: w.Active, Dead: w.Dead,
		Paused: w.Paused, OldestPending: time.Time(w.OldestPendingAt), OldestPendingAge: time.Duration(w.OldestPendingAge) * time.Millisecond,
		Workers: w.Workers, HistoryBacklog: w.HistoryBacklog, HeldKeys: w.HeldKeys, Throttled: w.Throttled, LimitRunning: w.LimitRunning}
	return nil
}
