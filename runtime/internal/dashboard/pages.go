package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

func (d *Dashboard) overview(r *http.Request, p *page) (int, error) {
	routes, err := d.a.Routes(r.Context())
	if err != nil {
		return 0, err
	}
	p.Title, p.Nav, p.Data, p.Refresh = "Overview", "overview", routes, d.cfg.Refresh.Milliseconds()
	if oa, ok := d.a.(admin.OutboxAdmin); ok { // the outbox's backlog, when the program has one
		if o, err := oa.Outbox(r.Context()); err == nil {
			p.Outbox = &o
		} else if !errors.Is(err, admin.ErrNoOutbox) {
			p.OutboxError = err.Error()
		}
	}
	return http.StatusOK, nil
}

// states are the job list's states, in the Inspector's words, with the
// names operators use. A job that failed for good is failed everywhere; the
// dead-letter queue is where it is kept.
var states = []struct {
	Value admin.Status
	Label string
}{
	{queue.StatusPending, "pending"}, {queue.StatusScheduled, "scheduled"}, {queue.StatusProcessing, "active"}, {queue.StatusFailed, "failed"},
}

type jobsData struct {
	Q      admin.JobQuery
	States []struct {
		Value admin.Status
		Label string
	}
	Routes []string
	Tasks  []string
	Page   bananastype.JobPage
	Next   string // link to the next page; "" at the end
	Bad    string // why the filter was refused
	// The bulk actions that fit the listed state (a listing holds one
	// state) and the session's role; the template hides them all in
	// read-only mode.
	CanReplay, CanDelete, CanCancel bool
	Back                            string // this listing, where a bulk action returns
	// TimeLabel heads the time column, which holds what the listed state
	// is waiting for or ended at: when a scheduled job runs, when a failed
	// one failed, else when the job was created.
	TimeLabel string
}

// timeLabels are the time column's heading by listed state (see jobsData).
var timeLabels = map[admin.Status]string{queue.StatusScheduled: "Runs at", queue.StatusFailed: "Failed at"}

// jobs lists a page of jobs of one state, the dead-letter queue (failed)
// newest first: the death an operator looks into is the latest.
func (d *Dashboard) jobs(r *http.Request, p *page) (int, error) {
	v := r.URL.Query()
	q := admin.JobQuery{Route: v.Get("route"), State: admin.Status(v.Get("state")), Task: v.Get("task"), Text: v.Get("q"), Cursor: v.Get("cursor")}
	if q.State == "" {
		q.State = queue.StatusPending
	}
	q.Newest = q.State == queue.StatusFailed
	waiting := q.State == queue.StatusPending || q.State == queue.StatusScheduled
	data := jobsData{Q: q, States: states, Back: r.URL.RequestURI(),
		CanReplay: q.State == queue.StatusFailed && p.Who.Role.Allows(needs["replayDeadJob"]),
		CanDelete: waiting && p.Who.Role.Allows(needs["deleteJob"]),
		CanCancel: (waiting || q.State == queue.StatusProcessing) && p.Who.Role.Allows(needs["cancelJob"]),
		TimeLabel: timeLabels[q.State],
	}
	if data.TimeLabel == "" {
		data.TimeLabel = "Created"
	}
	p.Title, p.Nav, p.Data = "Jobs", "jobs", &data
	if q.State == queue.StatusFailed {
		p.Title, p.Current = "Dead-letter queue", "dlq"
	}
	routes, err := d.a.Routes(r.Context())
	if err != nil {
		return 0, err
	}
	for _, rt := range routes {
		data.Routes = append(data.Routes, rt.Route)
	}
	for _, t := range d.a.Tasks() {
		data.Tasks = append(data.Tasks, t.Name)
	}
	if data.Page, err = d.a.Jobs(r.Context(), q); err != nil {
		if status, msg := statusOf(err); status == http.StatusBadRequest {
			// A bad filter keeps the form, so it can be fixed in place.
			data.Bad = msg
			return http.StatusBadRequest, nil
		}
		return 0, err
	}
	if data.Page.Next != "" {
		next := url.Values{}
		for k, val := range map[string]string{"route": q.Route, "state": string(q.State), "task": q.Task, "q": q.Text, "cursor": data.Page.Next} {
			if val != "" {
				next.Set(k, val)
			}
		}
		data.Next = "/jobs?" + next.Encode()
	}
	return http.StatusOK, nil
}

// jobRefresh is how often a running job's page polls for its status and
// progress, which its worker writes every 250 ms.
const jobRefresh = time.Second

type jobData struct {
	Job               *bananastype.Job
	Timeline          []event
	ErrorText, Detail string // the error's first line, and the rest (a stack) if any
	Args, Result      string // indented JSON; "" when there is none
	Back              string // this page, where actions return
	RouteLink         string
	// Live: the job runs, and the page keeps its status and progress fresh
	// (live.js, every second) until it stops.
	Live bool
}

func (d *Dashboard) job(r *http.Request, p *page) (int, error) {
	j, err := d.a.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, err
	}
	// A job read from the history is gone from Redis: no action reaches it.
	live := !j.FromHistory
	data := jobData{
		Job: j, Timeline: timeline(j), Args: indentJSON(j.Args), Result: indentJSON(j.ResultJSON),
		Back:      "/jobs/" + url.PathEscape(j.ID),
		RouteLink: "/jobs?" + url.Values{"route": {j.Route}}.Encode(),
	}
	if j.FromHistory {
		data.RouteLink = "/history?" + url.Values{"route": {j.Route}}.Encode()
	}
	data.ErrorText, data.Detail, _ = strings.Cut(j.Error, "\n")
	p.Title, p.Nav, p.Data = "Job "+j.ID, "job", &data
	if data.Live = live && j.Status == queue.StatusProcessing; data.Live {
		p.Refresh = jobRefresh.Milliseconds()
	}
	return http.StatusOK, nil
}

// event is one line of a job's timeline.
type event struct {
	What string
	At   time.Time
	Bad  bool   // a failed run
	Err  string // the error of a failed run of an earlier life, its last
	step int    // its place in a job's life, for events of one millisecond
}

// Steps of run n in a job's life, so that events of one millisecond keep
// its order: run n starts, fails, the life ends, the job is replayed.
func runStart(n int) int { return 4 * n }
func runFail(n int) int  { return 4*n + 1 }
func lifeEnd(n int) int  { return 4*n + 2 }
func replayed(n int) int { return 4*n + 3 }

// timeline is what happened to j, and what is due, in time order: created,
// the runs of each earlier life (each failed run it keeps the time of, its
// last error, its end and its replay), then this life's: each failed run's
// start (where kept) and end, the last (or current) run's start, the run or
// retry it waits for, its lease, its end. Runs are numbered across lives.
func timeline(j *bananastype.Job) []event {
	evs := []event{{What: "Created", At: j.CreatedAt}}
	if j.FromHistory {
		return historyTimeline(j, evs)
	}
	failed := failedRuns(j)
	base := 0 // runs of the earlier lives
	for _, l := range j.Earlier {
		last := l.FirstRun + max(l.Attempts, 1) - 1
		first := l.FirstRun + l.Attempts - len(l.FailedAt)
		for i, t := range l.FailedAt {
			n := first + i
			e := event{What: fmt.Sprintf("Run %d failed", n), At: t, Bad: true, step: runFail(n)}
			if i == len(l.FailedAt)-1 {
				e.Err = l.Error
			}
			evs = append(evs, e)
		}
		if !l.Started.IsZero() {
			evs = append(evs, event{What: fmt.Sprintf("Run %d started", last), At: l.Started, step: runStart(last)})
		}
		if !l.Died.IsZero() {
			evs = append(evs, event{What: "Failed for good", At: l.Died, step: lifeEnd(last)})
		}
		evs = append(evs, event{What: "Replayed", At: l.Replayed, step: replayed(last)})
		base = l.FirstRun + l.Attempts - 1
	}
	first := base + failed - len(j.FailedAt) + 1
	started := map[int]bool{} // runs whose start is shown
	for i, t := range j.FailedAt {
		n := first + i
		evs = append(evs, event{What: fmt.Sprintf("Run %d failed", n), At: t, Bad: true, step: runFail(n)})
		if i < len(j.FailedStartedAt) && !j.FailedStartedAt[i].IsZero() {
			evs = append(evs, event{What: fmt.Sprintf("Run %d started", n), At: j.FailedStartedAt[i], step: runStart(n)})
			started[n] = true
		}
	}
	if !j.StartedAt.IsZero() {
		// The current run of a running job, the one that ended a finished
		// one: the run after its failures. A job waiting (a retry) or dead
		// keeps the start of its last failed run, shown above when its
		// failure kept it.
		n := failed + 1
		if j.Status == queue.StatusFailed || j.Status == queue.StatusScheduled || j.Status == queue.StatusPending {
			n = max(failed, 1)
		}
		if !started[base+n] {
			evs = append(evs, event{What: fmt.Sprintf("Run %d started", base+n), At: j.StartedAt, step: runStart(base + n)})
		}
	}
	last := replayed(base + failed + 1)
	if !j.ScheduledAt.IsZero() {
		what := "Scheduled for"
		if failed > 0 {
			what = fmt.Sprintf("Retry %d at", failed)
		}
		evs = append(evs, event{What: what, At: j.ScheduledAt, step: last + 1})
	}
	if !j.LeaseDeadline.IsZero() {
		evs = append(evs, event{What: "Lease until", At: j.LeaseDeadline, step: last + 2})
	}
	if !j.FinishedAt.IsZero() {
		what := "Finished"
		if j.Status == queue.StatusExpired {
			what = "Expired: not started before its expiry"
		}
		evs = append(evs, event{What: what, At: j.FinishedAt, step: last + 3})
	}
	// Created stays first: the enqueuer's clock and a worker's may differ
	// by a few milliseconds, and a job does not run before it exists.
	slices.SortFunc(evs[1:], func(a, b event) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return a.step - b.step
	})
	return evs
}

// historyTimeline is the timeline of a job read from the task history,
// which keeps its creation, the start of the run that ended it and its end.
func historyTimeline(j *bananastype.Job, evs []event) []event {
	if !j.StartedAt.IsZero() {
		evs = append(evs, event{What: fmt.Sprintf("Run %d started", max(j.Attempts, 1)), At: j.StartedAt})
	}
	what := map[admin.Status]string{queue.StatusCompleted: "Completed", queue.StatusCanceled: "Canceled", queue.StatusExpired: "Expired: not started before its expiry"}[j.Status]
	if what == "" {
		what = "Failed for good"
	}
	return append(evs, event{What: what, At: j.FinishedAt, Bad: j.Status == queue.StatusFailed})
}

// failedRuns is how many of j's attempts failed: all of them, unless its
// last run did not fail — it runs, or it ended otherwise (completed,
// canceled while running) — which its start after its last failure shows.
func failedRuns(j *bananastype.Job) int {
	lastRanOn := !j.StartedAt.IsZero() && (len(j.FailedAt) == 0 || j.StartedAt.After(j.FailedAt[len(j.FailedAt)-1]))
	if lastRanOn && j.Attempts > 0 {
		return j.Attempts - 1
	}
	return j.Attempts
}

// indentJSON is b indented for reading; "" for none or null.
func indentJSON(b []byte) string {
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return unescapeHTML(out.String())
}

// unescapeHTML undoes encoding/json's \u003c, \u003e and \u0026 in strings,
// so that args read as they were written; the template escapes them for
// the page instead. Escapes are read left to right in pairs, so an escaped
// backslash followed by "u003c" stays as it is.
func unescapeHTML(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch s[i+2 : i+6] {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2])
		i++
	}
	return b.String()
}

func (d *Dashboard) cron(r *http.Request, p *page) (int, error) {
	entries, err := d.a.Cron(r.Context())
	p.Title, p.Nav, p.Data = "Cron", "cron", entries
	return http.StatusOK, err
}

// schedules is the schedules page: those made at run time, then the code's
// cron entries.
func (d *Dashboard) schedules(r *http.Request, p *page) (int, error) {
	list, err := d.a.Schedules(r.Context())
	p.Title, p.Nav, p.Data = "Schedules", "schedules", list
	return http.StatusOK, err
}

func (d *Dashboard) workers(r *http.Request, p *page) (int, error) {
	ws, err := d.a.Workers(r.Context())
	p.Title, p.Nav, p.Data = "Workers", "workers", ws
	return http.StatusOK, err
}

// taskRow is a task with its args schema, indented for reading.
type taskRow struct {
	admin.Task
	Schema string
}

func (d *Dashboard) tasks(r *http.Request, p *page) (int, error) {
	ts := d.a.Tasks()
	schemas, err := d.a.ArgsSchemas()
	if err != nil {
		return 0, err
	}
	rows := make([]taskRow, len(ts))
	for i, t := range ts {
		rows[i] = taskRow{Task: t}
		if t.ArgsType != "" || len(t.Args) > 0 { // a task without args has no schema worth showing
			rows[i].Schema = indentJSON(schemas[t.Name])
		}
	}
	p.Title, p.Nav, p.Data = "Tasks", "tasks", rows
	return http.StatusOK, nil
}

// limits is a route's page of flow control: its own limits, with a form to
// change them, and its keys running, waiting and held back.
func (d *Dashboard) limits(r *http.Request, p *page) (int, error) {
	f, err := d.a.Flows(r.Context(), r.PathValue("route"))
	if err != nil {
		return 0, err
	}
	// A route's page is no section of the header: none is marked current,
	// and the page leads back to the overview, where its route is listed.
	p.Title, p.Nav, p.Data = "Limits of route "+f.Route, "limits", f
	p.Values = map[string]string{"rate": f.Limits.Rate}
	if n := f.Limits.MaxRunning; n > 0 {
		p.Values["max_running"] = strconv.Itoa(n)
	}
	if n := f.Limits.Burst; n > 0 {
		p.Values["burst"] = strconv.Itoa(n)
	}
	return http.StatusOK, nil
}
