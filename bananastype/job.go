package bananastype

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Job is one job, whether Redis holds it or the task history: what `job
// ID`, GET /api/v1/jobs/{id}, the dashboard's job page and Client.Job show
// (a snapshot of its state), and each row of the task history (one end of
// the job: a job dead-lettered, replayed and then completed has two, told
// apart by Life; a history.Store writes and returns Jobs). In a listing
// (JobPage) it comes without its args and result.
type Job struct {
	ID          string
	Name        string
	Route       string
	Priority    queue.Priority
	Status      queue.Status
	Description string
	// Attempts is the number of runs the job has started that count: each
	// run that ended in success, failure, cancel or a lost lease, and the
	// one running now. A run handed back at shutdown, or one that asked to
	// run later (RetryAfter), does not count. Retries says how many of
	// them were retries; a job dies when a run fails with Retries equal to
	// MaxRetries.
	Attempts   int
	MaxRetries int
	Error      string // the last failure, if any
	// FailedAt holds when its failed runs ended, oldest first: the last 20
	// of them (a job's timeline), the final failure of a dead job included.
	FailedAt []time.Time
	// FailedStartedAt holds when each run of FailedAt started, in the same
	// order; the zero time where it was not kept. The dashboard's timeline
	// shows it.
	FailedStartedAt []time.Time
	// Earlier holds the lives it had before it was replayed from the
	// dead-letter queue, oldest first (the last 10): their runs, failure
	// times and last error.
	Earlier     []queue.EarlierLife
	Timeout     time.Duration // 0: the worker's default
	CreatedAt   time.Time
	ScheduledAt time.Time // StatusScheduled: when it becomes ready
	StartedAt   time.Time // the last (or current) run
	FinishedAt  time.Time
	// LeaseDeadline is when the running job's lease ends unless renewed.
	LeaseDeadline time.Time
	// Life counts the job's replays before the end the task history keeps
	// (0 for a job never replayed): with ID and Attempts it keys a row of
	// the history. Worker is the worker that recorded that end, when known,
	// and Sanitized what the store changed to keep the row (NUL bytes or
	// invalid UTF-8 in its text, JSON it could not store), "" when none.
	// Only a job read from the history has them.
	Life      int
	Worker    string
	Sanitized string
	// Args are the job's arguments as the JSON of the task's args type,
	// when this program declares a task of the job's name (its generated
	// code is linked in); nil otherwise. ArgsMsgpack holds them as stored,
	// whatever the program.
	Args        json.RawMessage
	ArgsMsgpack []byte
	// Result is the msgpack-encoded result of a completed job; ResultJSON
	// the same as the JSON of the task's result type, when this program
	// registers the task (nil otherwise). The task history keeps
	// ResultJSON only.
	Result     []byte
	ResultJSON json.RawMessage
	// Untyped: no task of the job's name is registered in this program, so
	// Args or ResultJSON (or both) are the stored msgpack decoded without
	// their Go types, as generic JSON.
	Untyped bool
	// FromHistory: Redis has let the job go and this is its newest row in
	// the task history, which keeps what the job was and how it ended.
	FromHistory bool
	// Workflow is the id of the workflow the job is a step of; "" for a
	// job of no workflow (or one read from the task history).
	Workflow string
	// Progress is what the running job's current run last reported
	// (runtime.Progress); nil when the job is not running or its current
	// run has reported nothing yet (a retry starts with none).
	Progress *Progress
}

// Progress is how far a running job has got, as its handler last said.
type Progress struct {
	Percent int       // 0..100
	Note    string    // at most 200 bytes
	At      time.Time // when the handler said it
}

// Retries is how many of the job's attempts were retries: every run after
// the first.
func (j *Job) Retries() int { return max(j.Attempts-1, 0) }

// MarshalJSON writes the job as `job ID --json` and the API show it.
func (j Job) MarshalJSON() ([]byte, error) { return json.Marshal(j.wire()) }

// WireType is the value whose JSON shape the job writes (for the OpenAPI
// document).
func (Job) WireType() any { return jobWire{} }

// jobWire is a job's JSON: its listing's fields and what a listing leaves
// out.
type jobWire struct {
	jobSummaryWire
	TimeoutMS int64           `json:"timeout_ms"`
	StartedAt Time            `json:"started_at"`
	FailedAt  []Time          `json:"failed_at"` // when its last failed runs ended, oldest first; [] when none
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result"`
	// FromHistory is true when the job was read from the task history (Redis
	// had let it go).
	FromHistory bool `json:"from_history,omitempty"`
	// Untyped is true when no task of the job's name is registered in the
	// program that answers: args or result are then the stored values
	// decoded without their Go types, as generic JSON.
	Untyped bool `json:"untyped,omitempty"`
	// Workflow is the id of the workflow the job is a step of.
	Workflow string `json:"workflow,omitempty"`
	// Progress, Note and At are what the running job's current run last
	// reported: how far it got (0..100), its note and when; all three
	// absent while there is none.
	Progress *int    `json:"progress,omitempty"`
	Note     *string `json:"note,omitempty"`
	At       *Time   `json:"at,omitempty"`
}

func (j *Job) wire() jobWire {
	w := jobWire{jobSummaryWire: j.summary(), TimeoutMS: j.Timeout.Milliseconds(), StartedAt: Time(j.StartedAt),
		FailedAt: mapOf(j.FailedAt, func(t time.Time) Time { return Time(t) }), Args: j.Args, Result: j.ResultJSON, FromHistory: j.FromHistory, Untyped: j.Untyped, Workflow: j.Workflow}
	if !isJSON(w.Args) {
		w.Args = json.RawMessage("null")
	}
	if !isJSON(w.Result) {
		w.Result = json.RawMessage("null")
	}
	if p := j.Progress; p != nil {
		at := Time(p.At)
		w.Progress, w.Note, w.At = &p.Percent, &p.Note, &at
	}
	return w
}

// jobSummaryWire is a job in a listing: its fields without args and result.
type jobSummaryWire struct {
	ID            string         `json:"id"`
	Task          string         `json:"task"`
	Route         string         `json:"route"`
	Priority      queue.Priority `json:"priority"`
	Status        queue.Status   `json:"status"`
	Description   string         `json:"description,omitempty"`
	Attempts      int            `json:"attempts"` // runs started that count (Job.Attempts)
	Retries       int            `json:"retries"`  // of those, the runs after the first: at most max_retries
	MaxRetries    int            `json:"max_retries"`
	Error         string         `json:"error,omitempty"`
	CreatedAt     Time           `json:"created_at"`
	ScheduledAt   Time           `json:"scheduled_at"`
	FinishedAt    Time           `json:"finished_at"`
	LeaseDeadline Time           `json:"lease_deadline"`
}

func (j *Job) summary() jobSummaryWire {
	return jobSummaryWire{
		ID: j.ID, Task: j.Name, Route: j.Route, Priority: j.Priority, Status: j.Status, Description: j.Description,
		Attempts: j.Attempts, Retries: j.Retries(), MaxRetries: j.MaxRetries, Error: j.Error, CreatedAt: Time(j.CreatedAt),
		ScheduledAt: Time(j.ScheduledAt), FinishedAt: Time(j.FinishedAt), LeaseDeadline: Time(j.LeaseDeadline),
	}
}

// JobPage is one page of a listing.
type JobPage struct {
	Jobs []Job  // without Args and Result: read one job with Job for those
	Next string // the cursor of the next page; "" at the end
}

// MarshalJSON writes the page as `jobs --json` and GET /api/v1/jobs show
// it: each job's listing fields.
func (p JobPage) MarshalJSON() ([]byte, error) { return json.Marshal(p.wire()) }

// WireType is the value whose JSON shape the page writes.
func (JobPage) WireType() any { return pageWire{} }

type pageWire struct {
	Jobs []jobSummaryWire `json:"jobs"`
	Next string           `json:"next"` // "" at the end
}

func (p JobPage) wire() pageWire {
	return pageWire{Next: p.Next, Jobs: mapOf(p.Jobs, func(j Job) jobSummaryWire { return j.summary() })}
}

// Time is a time in JSON: RFC 3339 in UTC, or null when zero.
type Time time.Time

func (t Time) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(time.Time(t).UTC().Format(time.RFC3339Nano))
}

// UnmarshalJSON reads a time as MarshalJSON writes it: null is the zero
// time.
func (t *Time) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*t = Time{}
		return nil
	}
	return (*time.Time)(t).UnmarshalJSON(data)
}

// UnmarshalJSON reads the job as MarshalJSON (or a listing) writes it, so
// that a Go client of the API or of `job ID --json` reads it back.
func (j *Job) UnmarshalJSON(data []byte) error {
	var w jobWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	s := w.jobSummaryWire
	*j = Job{ID: s.ID, Name: s.Task, Route: s.Route, Priority: s.Priority, Status: s.Status, Description: s.Description,
		Attempts: s.Attempts, MaxRetries: s.MaxRetries, Error: s.Error, CreatedAt: time.Time(s.CreatedAt),
		ScheduledAt: time.Time(s.ScheduledAt), FinishedAt: time.Time(s.FinishedAt), LeaseDeadline: time.Time(s.LeaseDeadline),
		Timeout: time.Duration(w.TimeoutMS) * time.Millisecond, StartedAt: time.Time(w.StartedAt),
		FailedAt: mapOf(w.FailedAt, func(t Time) time.Time { return time.Time(t) }), Workflow: w.Workflow}
	if len(w.Args) > 0 && string(w.Args) != "null" {
		j.Args = w.Args
	}
	if len(w.Result) > 0 && string(w.Result) != "null" {
		j.ResultJSON = w.Result
	}
	if w.Progress != nil {
		j.Progress = &Progress{Percent: *w.Progress}
		if w.Note != nil {
			j.Progress.Note = *w.Note
		}
		if w.At != nil {
			j.Progress.At = time.Time(*w.At)
		}
	}
	return nil
}

// mapOf maps each element of xs through f, into an empty list (not null)
// when there is none.
func mapOf[T, V any](xs []T, f func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
