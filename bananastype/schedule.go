package bananastype

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Overlap is what a schedule does at a tick while the job of its last
// tick is unfinished (its overlap policy).
type Overlap string

// The overlap policies.
const (
	// OverlapSkip starts no job for the tick; the skip is counted
	// (bananas_schedule_skipped_total). The default.
	OverlapSkip Overlap = "skip"
	// OverlapBufferOne enqueues the tick's job unless the last one is still
	// waiting to start: at most one job waits behind a running one.
	OverlapBufferOne Overlap = "buffer_one"
	// OverlapAllow enqueues the tick's job whatever the last one does.
	OverlapAllow Overlap = "allow"
	// OverlapCancelRunning cancels the last job, then enqueues the tick's.
	OverlapCancelRunning Overlap = "cancel_running"
)

// Valid reports whether o names an overlap policy.
func (o Overlap) Valid() bool {
	return o == OverlapSkip || o == OverlapBufferOne || o == OverlapAllow || o == OverlapCancelRunning
}

// Where a schedule comes from: Schedule.Source.
const (
	SourceData = "data" // made at run time (Task.Schedule, PUT /api/v1/schedules/{id}); may be changed and deleted
	SourceCode = "code" // a //bananas:cron entry of the program; shown, not changed
)

// Schedule is a schedule with its state: one made at run time, or a cron
// entry of the code (Source "code", its ID the task's name). It is the one
// type of a schedule: Client.Schedules and Worker.CronStatus return it,
// and `app schedules list`, `cron list`, GET /api/v1/schedules, GET
// /api/v1/cron and the dashboard show it, in one JSON shape.
type Schedule struct {
	ID       string
	Source   string // SourceData or SourceCode
	Name     string // the task's wire name
	Route    string
	Priority queue.Priority
	Args     json.RawMessage // the args of every tick's job; nil for a code entry
	Spec, TZ string
	Jitter   time.Duration
	Overlap  Overlap
	CatchUp  time.Duration
	Start    time.Time // zero: no bound
	End      time.Time
	Paused   bool
	NextRun  time.Time // the next tick; zero when none is left
	LastRun  time.Time // when the last tick's job was enqueued
	LastJob  string
	// LastJobStatus is the last job's status; "" when there is none or its
	// record is gone.
	LastJobStatus queue.Status
	// Unregistered: the task is not registered in the program that
	// listed the schedule (the API's, the CLI's), so it cannot check the
	// schedule's args; its jobs wait for a worker that registers it.
	Unregistered bool
	// Registered: a live worker registers the task (its heartbeat lists
	// it). False when none does: the schedule's jobs wait for a worker
	// that may never come.
	Registered bool
	RunCount   int64 // ticks whose job was enqueued
	Skipped    int64 // ticks skipped by the overlap policy
	// LastError is, for a cron entry of the code, the scheduler's last
	// error, or else the failure of its last job.
	LastError string
}

func (s Schedule) MarshalJSON() ([]byte, error) { return json.Marshal(s.wire()) }

// WireType is the value whose JSON shape the schedule writes.
func (Schedule) WireType() any { return scheduleWire{} }

type scheduleWire struct {
	ID        string          `json:"id"`
	Source    string          `json:"source"`
	Name      string          `json:"name"`
	Route     string          `json:"route"`
	Priority  queue.Priority  `json:"priority"`
	Args      json.RawMessage `json:"args,omitempty"`
	Spec      string          `json:"cron"`
	TZ        string          `json:"tz,omitempty"`
	JitterMS  int64           `json:"jitter_ms"`
	Overlap   Overlap         `json:"overlap"`
	CatchUpMS int64           `json:"catch_up_ms"`
	Start     Time            `json:"start"`
	End       Time            `json:"end"`
	Paused    bool            `json:"paused"`
	NextRun   Time            `json:"next_run"`
	LastRun   Time            `json:"last_run"`
	LastJob   string          `json:"last_job,omitempty"`
	LastStat  queue.Status    `json:"last_job_status,omitempty"`
	Unreg     bool            `json:"unregistered,omitempty"`
	Reg       bool            `json:"registered"`
	RunCount  int64           `json:"run_count"`
	Skipped   int64           `json:"skipped"`
	LastError string          `json:"last_error,omitempty"`
}

func (s Schedule) wire() scheduleWire {
	return scheduleWire{ID: s.ID, Source: s.Source, Name: s.Name, Route: s.Route, Priority: s.Priority, Args: s.Args,
		Spec: s.Spec, TZ: s.TZ, JitterMS: s.Jitter.Milliseconds(), Overlap: s.Overlap, CatchUpMS: s.CatchUp.Milliseconds(),
		Start: Time(s.Start), End: Time(s.End), Paused: s.Paused, NextRun: Time(s.NextRun), LastRun: Time(s.LastRun),
		LastJob: s.LastJob, LastStat: s.LastJobStatus, Unreg: s.Unregistered, Reg: s.Registered, RunCount: s.RunCount, Skipped: s.Skipped,
		LastError: s.LastError}
}

// UnmarshalJSON reads the schedule as MarshalJSON writes it.
func (s *Schedule) UnmarshalJSON(data []byte) error {
	var w scheduleWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*s = Schedule{ID: w.ID, Source: w.Source, Name: w.Name, Route: w.Route, Priority: w.Priority, Args: w.Args,
		Spec: w.Spec, TZ: w.TZ, Jitter: time.Duration(w.JitterMS) * time.Millisecond, Overlap: w.Overlap,
		CatchUp: time.Duration(w.CatchUpMS) * time.Millisecond, Start: time.Time(w.Start), End: time.Time(w.End),
		Paused: w.Paused, NextRun: time.Time(w.NextRun), LastRun: time.Time(w.LastRun), LastJob: w.LastJob,
		LastJobStatus: w.LastStat, Unregistered: w.Unreg, Registered: w.Reg, RunCount: w.RunCount, Skipped: w.Skipped,
		LastError: w.LastError}
	return nil
}
