package admin

import (
	"encoding/json"
	"errors"
	"time"
)

// ErrNoHistory: the program keeps no task history (HISTORY_URL is unset),
// so there is nothing to search or migrate. A NotFound: the history the
// request names does not exist here, and no request can make it.
var ErrNoHistory = errors.New("bananas: no task history: this program keeps none; set HISTORY_URL (such as postgres://user:pass@host:5432/db) and import its store's package")

// HistoryRow is one end of one job as the task history keeps it: `history`,
// GET /api/v1/history and the dashboard's history page. A job dead-lettered,
// replayed and then completed has two rows, told apart by Life.
type HistoryRow struct {
	ID string
	// Life counts the job's replays before this end (0 for a job never
	// replayed); Attempt is the run that ended it, 1-based.
	Life, Attempt int
	Task          string
	Route         string
	Priority      Priority
	Status        Status          // completed, failed or canceled
	Args          json.RawMessage // the JSON of the task's args; nil when unknown
	Result        json.RawMessage // a completed job's result as JSON; nil when none
	Error         string          // why a failed or canceled job ended
	EnqueuedAt    time.Time
	StartedAt     time.Time // zero when it never started (canceled while waiting)
	EndedAt       time.Time
	Worker        string // the worker that recorded the end, when known
	// Sanitized says what the store changed to keep the row (NUL bytes or
	// invalid UTF-8 in its text, JSON it could not store); "" when none.
	Sanitized string
}

func (r HistoryRow) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }

// WireType is the value whose JSON shape the row writes.
func (HistoryRow) WireType() any { return historyRowWire{} }

type historyRowWire struct {
	ID         string          `json:"id"`
	Life       int             `json:"life"`
	Attempt    int             `json:"attempt"`
	Task       string          `json:"task"`
	Route      string          `json:"route"`
	Priority   Priority        `json:"priority"`
	Status     Status          `json:"status"`
	Args       json.RawMessage `json:"args"`   // null when unknown
	Result     json.RawMessage `json:"result"` // null when none
	Error      string          `json:"error"`  // "" when none
	EnqueuedAt Time            `json:"enqueued_at"`
	StartedAt  Time            `json:"started_at"` // null when it never started
	EndedAt    Time            `json:"ended_at"`
	Worker     string          `json:"worker"`              // "" when unknown
	Sanitized  string          `json:"sanitized,omitempty"` // what the store changed to keep the row
}

func (r HistoryRow) wire() historyRowWire {
	w := historyRowWire{ID: r.ID, Life: r.Life, Attempt: r.Attempt, Task: r.Task, Route: r.Route, Priority: r.Priority,
		Status: r.Status, Args: r.Args, Result: r.Result, Error: r.Error, EnqueuedAt: Time(r.EnqueuedAt),
		StartedAt: Time(r.StartedAt), EndedAt: Time(r.EndedAt), Worker: r.Worker, Sanitized: r.Sanitized}
	if !isJSON(w.Args) {
		w.Args = json.RawMessage("null")
	}
	if !isJSON(w.Result) {
		w.Result = json.RawMessage("null")
	}
	return w
}

// UnmarshalJSON reads the row as MarshalJSON writes it, so that a Go client
// of the API or of `history --json` reads it back.
func (r *HistoryRow) UnmarshalJSON(data []byte) error {
	var w historyRowWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = HistoryRow{ID: w.ID, Life: w.Life, Attempt: w.Attempt, Task: w.Task, Route: w.Route, Priority: w.Priority,
		Status: w.Status, Error: w.Error, EnqueuedAt: time.Time(w.EnqueuedAt), StartedAt: time.Time(w.StartedAt),
		EndedAt: time.Time(w.EndedAt), Worker: w.Worker, Sanitized: w.Sanitized}
	if isJSON(w.Args) {
		r.Args = w.Args
	}
	if isJSON(w.Result) {
		r.Result = w.Result
	}
	return nil
}

func isJSON(b json.RawMessage) bool { return len(b) > 0 && string(b) != "null" }

// HistoryQuery selects a page of the task history, newest end first. Zero
// fields select everything.
type HistoryQuery struct {
	Task   string
	Route  string
	Status Status    // completed, failed or canceled; "" any
	Since  time.Time // ended at or after; zero: the HistoryWindow before Until (or now)
	Until  time.Time // ended before; zero: no bound
	// Text matches rows whose job id or error holds it: at least
	// HistoryMinText characters.
	Text string
	// Args selects on the args' fields: a dotted path ("customer.id") to
	// the value it must hold, compared as text; every pair must match.
	Args map[string]string
	// Cursor is the Next of the page before; "" is the first page.
	Cursor string
	// Limit is the most rows a page holds (default 50, at most 500).
	Limit int
}

// HistoryStatuses are the statuses a history row has, in the order the
// surfaces offer them.
var HistoryStatuses = []Status{"completed", "failed", "canceled"}

// Bounds of a search of the task history, so that no search reads a whole
// long history: a text shorter than HistoryMinText matches through no
// trigram index (it would read every row in range), and a search with no
// since reads the HistoryWindow before its until (or before now).
const (
	HistoryMinText = 3
	HistoryWindow  = 7 * 24 * time.Hour
)

// HistoryPage is one page of the task history, newest end first.
type HistoryPage struct {
	Jobs []HistoryRow
	Next string // the cursor of the next page; "" at the end
	// Since and Until are the window searched: the query's, or Since the
	// HistoryWindow before Until when it had none; Until zero is open (up
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
	return historyPageWire{Next: p.Next, Jobs: Map(p.Jobs, func(r HistoryRow) historyRowWire { return r.wire() }),
		Since: Time(p.Since), Until: Time(p.Until)}
}

// UnmarshalJSON reads the page as MarshalJSON writes it.
func (p *HistoryPage) UnmarshalJSON(data []byte) error {
	var w struct {
		Jobs  []HistoryRow `json:"jobs"`
		Next  string       `json:"next"`
		Since *time.Time   `json:"since"`
		Until *time.Time   `json:"until"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = HistoryPage{Jobs: w.Jobs, Next: w.Next}
	if w.Since != nil {
		p.Since = *w.Since
	}
	if w.Until != nil {
		p.Until = *w.Until
	}
	return nil
}
