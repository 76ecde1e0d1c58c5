package bananastype

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// A row of the task history is a Job (one end of it); its JSON, in
// `history --json` and GET /api/v1/history, is a row's.

type historyRowWire struct {
	ID         string          `json:"id"`
	Life       int             `json:"life"`
	Attempt    int             `json:"attempt"`
	Task       string          `json:"task"`
	Route      string          `json:"route"`
	Priority   queue.Priority  `json:"priority"`
	Status     queue.Status    `json:"status"`
	Args       json.RawMessage `json:"args"`   // null when unknown
	Result     json.RawMessage `json:"result"` // null when none
	Error      string          `json:"error"`  // "" when none
	EnqueuedAt Time            `json:"enqueued_at"`
	StartedAt  Time            `json:"started_at"` // null when it never started
	EndedAt    Time            `json:"ended_at"`
	Worker     string          `json:"worker"`              // "" when unknown
	Sanitized  string          `json:"sanitized,omitempty"` // what the store changed to keep the row
}

// historyRow is j as a row of the task history writes it.
func (j Job) historyRow() historyRowWire {
	w := historyRowWire{ID: j.ID, Life: j.Life, Attempt: j.Attempts, Task: j.Name, Route: j.Route, Priority: j.Priority,
		Status: j.Status, Args: j.Args, Result: j.ResultJSON, Error: j.Error, EnqueuedAt: Time(j.CreatedAt),
		StartedAt: Time(j.StartedAt), EndedAt: Time(j.FinishedAt), Worker: j.Worker, Sanitized: j.Sanitized}
	if !isJSON(w.Args) {
		w.Args = json.RawMessage("null")
	}
	if !isJSON(w.Result) {
		w.Result = json.RawMessage("null")
	}
	return w
}

// job is the Job a row of the task history reads back as.
func (w historyRowWire) job() Job {
	j := Job{ID: w.ID, Life: w.Life, Attempts: w.Attempt, Name: w.Task, Route: w.Route, Priority: w.Priority,
		Status: w.Status, Error: w.Error, CreatedAt: time.Time(w.EnqueuedAt), StartedAt: time.Time(w.StartedAt),
		FinishedAt: time.Time(w.EndedAt), Worker: w.Worker, Sanitized: w.Sanitized}
	if isJSON(w.Args) {
		j.Args = w.Args
	}
	if isJSON(w.Result) {
		j.ResultJSON = w.Result
	}
	return j
}

func isJSON(b json.RawMessage) bool { return len(b) > 0 && string(b) != "null" }

// HistoryPage is one page of the task history, newest end first.
type HistoryPage struct {
	Jobs []Job  // rows of the task history: one end of a job each
	Next string // the cursor of the next page; "" at the end
	// Since and Until are the window searched: the query's, or Since the
	// admin.HistoryWindow before Until when it had none; Until zero is open (up
	// to now and after).
	Since, Until time.Time
}

// MarshalJSON writes the page as `history --json` and GET /api/v1/history
// show it.
func (p HistoryPage) MarshalJSON() ([]byte, error) { return json.Marshal(p.wire()) }

// WireType is the value whose JSON shape the page writes.
func (HistoryPage) WireType() any { return historyPageWire{} }

type historyPageWire struct {
	Jobs  []historyRowWire `json:"jobs"`
	Next  string           `json:"next"`  // "" at the end
	Since Time             `json:"since"` // the window searched: ended at or after
	Until Time             `json:"until"` // and before; null: open
}

func (p HistoryPage) wire() historyPageWire {
	return historyPageWire{Next: p.Next, Jobs: mapOf(p.Jobs, Job.historyRow),
		Since: Time(p.Since), Until: Time(p.Until)}
}

// UnmarshalJSON reads the page as MarshalJSON writes it.
func (p *HistoryPage) UnmarshalJSON(data []byte) error {
	var w struct {
		Jobs  []historyRowWire `json:"jobs"`
		Next  string           `json:"next"`
		Since *time.Time       `json:"since"`
		Until *time.Time       `json:"until"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = HistoryPage{Jobs: mapOf(w.Jobs, historyRowWire.job), Next: w.Next}
	if w.Since != nil {
		p.Since = *w.Since
	}
	if w.Until != nil {
		p.Until = *w.Until
	}
	return nil
}
