package runtime

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// The --json convention of every command (docs/OPERATIONS.md): snake_case
// keys; times in RFC 3339, UTC, or null when unset (never Go's zero time);
// durations as whole milliseconds in keys ending in _ms; args and results as
// the JSON of their Go types, decoded by the task's generated code.

// jsonTime is a time in --json output.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(time.Time(t).UTC().Format(time.RFC3339Nano))
}

// jobJSON is `job ID --json`.
type jobJSON struct {
	ID            string          `json:"id"`
	Task          string          `json:"task"`
	Route         string          `json:"route"`
	Priority      Priority        `json:"priority"`
	Status        Status          `json:"status"`
	Description   string          `json:"description,omitempty"`
	Attempts      int             `json:"attempts"`
	MaxRetries    int             `json:"max_retries"`
	TimeoutMS     int64           `json:"timeout_ms"`
	Error         string          `json:"error,omitempty"`
	CreatedAt     jsonTime        `json:"created_at"`
	ScheduledAt   jsonTime        `json:"scheduled_at"`
	StartedAt     jsonTime        `json:"started_at"`
	FinishedAt    jsonTime        `json:"finished_at"`
	LeaseDeadline jsonTime        `json:"lease_deadline"`
	Args          json.RawMessage `json:"args"`
	Result        json.RawMessage `json:"result"`
}

// jobView is info as --json shows it, its args and result decoded by h (nil
// when no task of that name is registered in this program: then they are
// null).
func jobView(info *JobInfo, h *handler) jobJSON {
	v := jobJSON{
		ID: info.ID, Task: info.Name, Route: info.Route, Priority: info.Priority, Status: info.Status,
		Description: info.Description, Attempts: info.Attempts, MaxRetries: info.MaxRetries,
		TimeoutMS: info.Timeout.Milliseconds(), Error: info.Error,
		CreatedAt: jsonTime(info.CreatedAt), ScheduledAt: jsonTime(info.ScheduledAt), StartedAt: jsonTime(info.StartedAt),
		FinishedAt: jsonTime(info.FinishedAt), LeaseDeadline: jsonTime(info.LeaseDeadline),
		Args: json.RawMessage("null"), Result: json.RawMessage("null"),
	}
	if h != nil && h.argsJSON != nil {
		if len(info.Args) > 0 {
			if b, err := h.argsJSON(info.Args); err == nil {
				v.Args = b
			}
		}
		if len(info.Result) > 0 {
			if b, err := h.resultJSON(info.Result); err == nil {
				v.Result = b
			}
		}
	}
	return v
}

// deadJSON is one entry of `dlq list --json`.
type deadJSON struct {
	ID       string   `json:"id"`
	Task     string   `json:"task"`
	Route    string   `json:"route"`
	Attempts int      `json:"attempts"`
	DiedAt   jsonTime `json:"died_at"`
	Error    string   `json:"error"`
}

func deadView(d queue.DeadJob) deadJSON {
	return deadJSON{ID: d.ID, Task: d.Name, Route: d.Route, Attempts: d.Attempts, DiedAt: jsonTime(d.DiedAt), Error: d.Error}
}

// cronJSON is one entry of `cron list --json`.
type cronJSON struct {
	Name      string   `json:"name"`
	Route     string   `json:"route"`
	Priority  Priority `json:"priority"`
	Spec      string   `json:"spec"`
	TZ        string   `json:"tz,omitempty"`
	LastRun   jsonTime `json:"last_run"`
	NextRun   jsonTime `json:"next_run"`
	RunCount  int64    `json:"run_count"`
	LastJob   string   `json:"last_job,omitempty"`
	LastError string   `json:"last_error,omitempty"`
}

func cronView(s CronStatus) cronJSON {
	return cronJSON{Name: s.Name, Route: s.Route, Priority: s.Priority, Spec: s.Spec, TZ: s.TZ,
		LastRun: jsonTime(s.LastRun), NextRun: jsonTime(s.NextRun), RunCount: s.RunCount, LastJob: s.LastJob, LastError: s.LastError}
}

// views maps each element of xs through f, into an empty list (not null)
// when there is none.
func views[T, V any](xs []T, f func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
