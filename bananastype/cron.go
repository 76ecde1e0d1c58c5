package bananastype

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// CronEntry is a schedule: a task's cron entry with its state in Redis.
// Worker.CronStatus returns them; `cron list`, GET /api/v1/cron and the
// dashboard's cron page show them.
type CronEntry struct {
	Name     string // the task's wire name
	Route    string
	Priority queue.Priority
	Spec     string // five cron fields, or a descriptor such as @every 1s
	TZ       string // "" the worker's local time
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
	Name      string         `json:"name"`
	Route     string         `json:"route"`
	Priority  queue.Priority `json:"priority"`
	Spec      string         `json:"spec"`
	TZ        string         `json:"tz,omitempty"`
	LastRun   Time           `json:"last_run"`
	NextRun   Time           `json:"next_run"`
	RunCount  int64          `json:"run_count"`
	LastJob   string         `json:"last_job,omitempty"`
	LastError string         `json:"last_error,omitempty"`
}

func (c CronEntry) wire() cronWire {
	return cronWire{Name: c.Name, Route: c.Route, Priority: c.Priority, Spec: c.Spec, TZ: c.TZ,
		LastRun: Time(c.LastRun), NextRun: Time(c.NextRun), RunCount: c.RunCount, LastJob: c.LastJob, LastError: c.LastError}
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
