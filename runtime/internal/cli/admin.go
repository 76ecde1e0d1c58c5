package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// adminCommands are the commands over the admin layer, in the help's order:
// a command is declared once, here, with its lines in the help.
var adminCommands = []Spec{
	{"enqueue", cmdEnqueue, [][2]string{{"enqueue NAME JSON", "enqueue a task with JSON args [--route R --priority P --delay D --wait]"}}},
	{"job", cmdJob, nounHelp("job", "show a job [--json]")},
	{"workflow", cmdWorkflow, append(nounHelp("workflow", "show a workflow and its steps [--json]"),
		[2]string{"workflow signal ID NAME JSON", "send the signal NAME to a workflow, JSON its payload [--json]"})},
	{"workflows", cmdWorkflows, [][2]string{{"workflows", "list the workflows, newest first [--status S --task T --limit N --cursor C --json]"}}},
	{"jobs", cmdJobs, [][2]string{{"jobs", "list pending jobs [--state scheduled|processing|failed --route R --task T --q TEXT]"}}},
	{"queues", cmdQueues, [][2]string{{"queues", "jobs per route in each place, paused or not, and its workers"}}},
	{"pause", cmdPause(true), [][2]string{{"pause ROUTE", "stop every worker from taking jobs of a route (enqueues go on)"}}},
	{"resume", cmdPause(false), [][2]string{{"resume ROUTE", "let workers take jobs of a paused route again"}}},
	{"route", cmdRoute, [][2]string{{"route shards ROUTE [N]", "print a route's shard count, or spread the route over N shards (1-256) [--json]"}}},
	{"limits", cmdLimits, [][2]string{{"limits ROUTE", "a route's own limits and its keys running, waiting and held back; --max-running N, --rate N/s, --burst M change them (none removes) [--json]"}}},
	{"cancel", cmdCancelWaiting, [][2]string{{"cancel ROUTE", "cancel every pending and scheduled job of a route [--task T --json]"}}},
	{"run-scheduled", cmdRunScheduled, [][2]string{{"run-scheduled ROUTE", "run every scheduled job of a route now, its attempts as they were [--task T --json]"}}},
	{"dlq", cmdDLQ, [][2]string{{"dlq list|replay|purge", "the dead-letter queue: list, replay ID, replay --all, purge [--yes]"}}},
	{"cron", cmdCron, [][2]string{{"cron list", "cron entries and their state"}, {"cron run NAME", "enqueue one job of a cron entry now"}}},
	{"schedules", cmdSchedules, [][2]string{ // schedules.go
		{"schedules list", "schedules made at run time and the code's cron entries [--json]"},
		{"schedules set ID NAME JSON --cron SPEC", "create or change a schedule [--tz --jitter --overlap --catch-up --route --priority --start --end --paused]"},
		{"schedules delete|pause|resume|run ID", "delete, pause or resume a schedule, or run it now"},
		{"schedules backfill ID --from T --to T", "enqueue each tick of a range once, oldest first"}}},
	{"workers", cmdWorkers, [][2]string{{"workers", "live workers, from their heartbeats"}}},
	{"history", cmdHistory, [][2]string{
		{"history", "search the task history of ended jobs [--task T --route R --status S --since T --until T --q TEXT --arg F=V]"},
		{"history migrate", "create or migrate the task history's schema (HISTORY_URL)"}}},
	{"audit", cmdAudit, [][2]string{{"audit", "the audit log: who took which action on what, when, and how it ended, newest first [--limit N --cursor C --json]"}}},        // audit.go
	{"outbox", cmdOutbox, [][2]string{{"outbox", "the transactional outbox's backlog (OUTBOX_URL): committed jobs not yet in Redis, by task, the oldest's age [--json]"}}}, // outbox.go
	{"keys", cmdKeys, [][2]string{{"keys rotate", "reseal the args of waiting and scheduled jobs, and workflows' values, under the newest of BANANAS_KEYS; drop an old key once it reports 0 [--json]"}}},
}

// commandNamed is the command of specs called name.
func commandNamed(specs []Spec, name string) (Command, bool) {
	for _, c := range specs {
		if c.Name == name {
			return c.Run, true
		}
	}
	return nil, false
}

// noArgs refuses positionals a command does not take.
// parseNoArgs parses a command's flags, refusing any positional argument.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	return noArgs(pos)
}

func noArgs(pos []string) error {
	if len(pos) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", pos[0])}
	}
	return nil
}

func cmdEnqueue(e *Env, args []string) error {
	fs := e.Flags("NAME JSON [--route R] [--priority P] [--delay D] [--unique TTL [--unique-by F,G] [--unique-until U] [--debounce D]] [--expire D] [--wait] [--json]: enqueue a registered task with JSON args")
	route := fs.String("route", "", "route (default: the task's)")
	prio := fs.String("priority", "", "high, normal or low (default: the task's)")
	delay := fs.Duration("delay", 0, "run after this delay")
	uniq := uniqueFlags(fs)
	wait := fs.Bool("wait", false, "wait for the result and print it as JSON")
	expire := fs.String("expire", "", "expire the job unless it started within this duration (10m), or by this RFC 3339 time")
	timeout := fs.Duration("timeout", 0, "with --wait: give up after this long (0: never)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{fmt.Errorf("want NAME and JSON, got %d argument(s)", len(pos))}
	}
	s := admin.Submission{Name: pos[0], Args: json.RawMessage(pos[1]), Route: *route, Priority: *prio}
	if *delay != 0 {
		s.Delay = delay.String()
	}
	uniq.into(&s)
	s.Expire = *expire
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	if *wait && keepsNothing(c, s.Name) {
		return usageError{fmt.Errorf("--wait: task %s keeps nothing once a job completed (result_ttl=0), so the wait could begin after the end and find nothing; enqueue without --wait", s.Name)}
	}
	id, warning, err := c.Submit(e.Ctx, s)
	if errors.Is(err, admin.ErrDebounced) && id != "" {
		fmt.Fprintf(e.Stderr, "debounced: job %s, which holds the unique key, waits with these args\n", id)
		err = nil
	}
	if err != nil {
		return flagRefusal(err, "route", "priority", "delay", "unique", "unique_by", "unique_until", "debounce", "expire")
	}
	if warning != "" {
		if *wait && c.Embedded {
			return cannotFinish(e, c, id)
		}
		fmt.Fprintf(e.Stderr, "warning: %s\n", warning)
	}
	if !*wait {
		if *asJSON {
			return printJSON(e.Stdout, map[string]string{"id": id})
		}
		fmt.Fprintln(e.Stdout, id)
		return nil
	}
	res, err := await(e, c, id, *timeout)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, map[string]any{"id": id, "result": res})
	}
	return printJSON(e.Stdout, res)
}

// flagRefusal is the admin layer's refusal of a submission as the command
// line says it: a refused value of one of flags as `--priority urgent: use
// high, normal or low`, from the value and the reason the refusal carries
// (admin.InvalidValue); any other error as it is.
func flagRefusal(err error, flags ...string) error {
	p := admin.Classify(err)
	if p.Class != admin.BadInput || p.Reason == "" || !slices.Contains(flags, p.Field) {
		return err
	}
	flag := strings.ReplaceAll(p.Field, "_", "-") // unique_by is --unique-by
	if p.Value == "" {
		return usageError{fmt.Errorf("--%s: %s", flag, p.Reason)}
	}
	return usageError{fmt.Errorf("--%s %s: %s", flag, p.Value, p.Reason)}
}

// cannotFinish is the error of a wait for job id that no worker can run:
// on this process's own in-memory server no other process's worker takes
// it, and none runs in this one.
func cannotFinish(e *Env, c Conn, id string) error {
	route := "its route"
	if j, err := c.Job(e.Ctx, id); err == nil {
		route = "route " + j.Route
	}
	return fmt.Errorf("job %s cannot finish: REDIS_URL=mem:// is this process's own in-memory server, and no worker runs in this process; "+
		"use a Redis server that a worker of %s reaches", id, route)
}

// withoutResult says whether task name has no result: its generated
// description names no result type.
func withoutResult(c Conn, name string) bool {
	for _, t := range c.Tasks() {
		if t.Name == name {
			return t.Result == ""
		}
	}
	return false
}

// keepsNothing says whether task name keeps nothing of a completed job
// (result_ttl=0).
func keepsNothing(c Conn, name string) bool {
	for _, t := range c.Tasks() {
		if t.Name == name {
			return t.KeepsNothing
		}
	}
	return false
}

// forever is the wait of `enqueue --wait` without --timeout: until the job
// finishes or the command is interrupted.
const forever = 100 * 365 * 24 * time.Hour

// await waits up to timeout (0: for ever) for job id to finish and returns
// its result's JSON, or the job's error when it failed or was canceled.
func await(e *Env, c Conn, id string, timeout time.Duration) (json.RawMessage, error) {
	if timeout <= 0 {
		timeout = forever
	}
	j, err := c.Result(e.Ctx, id, timeout)
	if err != nil && admin.Classify(err).Class == admin.Failure {
		return nil, fmt.Errorf("job %s: %s", id, admin.Message(err)) // the wait's own failure: say whose
	}
	if err != nil {
		return nil, err // a refusal of the admin layer, which names the job
	}
	switch j.Status {
	case "completed":
		if withoutResult(c, j.Name) {
			return nil, nil // null: the {} of the None it completes with says nothing
		}
		return j.ResultJSON, nil
	case "failed":
		return nil, fmt.Errorf("job %s (%s) failed after %d attempt(s): %s", id, j.Name, j.Attempts, j.Error)
	case "canceled":
		return nil, fmt.Errorf("job %s (%s) was canceled: %s", id, j.Name, j.Error)
	case "expired":
		return nil, fmt.Errorf("job %s (%s) expired before it started: it never ran", id, j.Name)
	}
	if j.Status == "pending" && routePaused(e, c, j.Route) {
		return nil, fmt.Errorf("job %s is still pending after --timeout %s: route %s is paused, and no worker takes its jobs until it is resumed; "+
			"resume with `app resume %[3]s`", id, admin.FormatDuration(timeout), j.Route)
	}
	return nil, fmt.Errorf("job %s is still %s after --timeout %s", id, j.Status, admin.FormatDuration(timeout))
}

// routePaused says whether route is paused now; false when that cannot be
// read (the wait's own answer stands then).
func routePaused(e *Env, c Conn, route string) bool {
	routes, err := c.Routes(e.Ctx)
	if err != nil {
		return false
	}
	for _, r := range routes {
		if r.Route == route {
			return r.Paused
		}
	}
	return false
}

func cmdJob(e *Env, args []string) error {
	if ok, err := runVerb(e, "job", args); ok {
		return err
	}
	fs := e.Flags("ID [--json] | " + strings.Join(verbsOf("job"), "|") + " ID: show a job, or act on it")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("want one job ID")}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	j, err := c.Job(e.Ctx, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, j)
	}
	failed := make([]string, len(j.FailedAt))
	for i, t := range j.FailedAt {
		failed[i] = stamp(t)
	}
	rows := [][]string{
		{"id", j.ID}, {"task", j.Name}, {"route", j.Route}, {"priority", string(j.Priority)},
		{"status", string(j.Status)}, {"description", orDash(j.Description)}, {"workflow", orDash(j.Workflow)},
		{"attempts", attemptsText(j.Attempts, j.MaxRetries)},
		{"timeout", timeoutText(j.Timeout)},
		{"error", orDash(j.Error)}, {"created", stamp(j.CreatedAt)}, {"scheduled", stamp(j.ScheduledAt)},
		{"started", stamp(j.StartedAt)}, {"failed runs ended", orDash(strings.Join(failed, ", "))},
		{"finished", stamp(j.FinishedAt)},
		{"args", jsonOrDash(j.Args)}, {"result", jsonOrDash(j.ResultJSON)},
	}
	if p := j.Progress; p != nil {
		// Only while the current run has reported some: after the status.
		rows = slices.Insert(rows, 5, []string{"progress", progressText(p, time.Now())})
	}
	if j.Untyped {
		rows = append(rows, []string{"note", "task " + j.Name + " is not registered in this program: args and result are shown as stored, decoded without their Go types"})
	}
	return table(e.Stdout, nil, rows)
}

// progressText is a running job's progress for a person: "40% resizing (2s ago)".
func progressText(p *bananastype.Progress, now time.Time) string {
	s := fmt.Sprintf("%d%%", p.Percent)
	if p.Note != "" {
		s += " " + p.Note
	}
	return s + " (" + admin.FormatDuration(max(now.Sub(p.At), 0).Round(time.Second)) + " ago)"
}

// attemptsText says a job's attempts (runs started that count) and how many
// of them were retries out of those it may have: "2 (1 of 3 retries)".
func attemptsText(attempts, maxRetries int) string {
	return fmt.Sprintf("%d (%d of %d retries)", attempts, max(attempts-1, 0), maxRetries)
}

// timeoutText is a job's timeout as enqueued; 0 takes the worker's.
func timeoutText(d time.Duration) string {
	if d == 0 {
		return "the worker's default"
	}
	return admin.FormatDuration(d)
}

// jsonOrDash is a JSON value for a table: "-" for null.
func jsonOrDash(b json.RawMessage) string {
	if len(b) == 0 || string(b) == "null" {
		return "-"
	}
	return string(b)
}

var cmdJobs = listCommand("[--route R] [--state S] [--task T] [--q TEXT] [--limit N] [--cursor C] [--newest] [--json]: list the jobs waiting, running or dead, a page at a time",
	[]string{"ID", "ROUTE", "TASK", "PRIORITY", "STATUS", "ATTEMPTS", "WHEN", "ERROR"},
	func(fs *flag.FlagSet) lister {
		q := queryFlags(fs, 50)
		fs.StringVar((*string)(&q.State), "state", "pending", "pending, scheduled, processing or failed (completed jobs are not listed: job ID shows one)")
		fs.BoolVar(&q.Newest, "newest", false, "most recent first")
		return func(e *Env, a admin.Admin) (listing, error) {
			page, err := a.Jobs(e.Ctx, *q)
			if err != nil {
				return listing{}, err
			}
			rows := make([][]string, len(page.Jobs))
			for i, j := range page.Jobs {
				when := stamp(j.CreatedAt)
				switch j.Status {
				case "scheduled":
					when = stamp(j.ScheduledAt)
				case "failed":
					when = stamp(j.FinishedAt)
				}
				rows[i] = []string{j.ID, j.Route, j.Name, string(j.Priority), string(j.Status), fmt.Sprint(j.Attempts), when, orDash(firstLine(j.Error))}
			}
			return listing{rows: rows, js: page, next: page.Next, caption: jobsCaption(q, len(rows), page.Next != "")}, nil
		}
	})

// jobsCaption says what a page of `jobs` lists, and how to list the rest:
// an empty table alone does not say that it showed only pending jobs. A
// page is empty with more to come only when a filter (--task, --q) matched
// none of the entries the page read: it says so, never "no jobs".
func jobsCaption(q *admin.JobQuery, n int, more bool) string {
	where := "every route"
	if n == 0 {
		where = "any route"
	}
	if q.Route != "" {
		where = "route " + q.Route
	}
	if q.Task != "" {
		where += ", task " + q.Task
	}
	what := fmt.Sprintf("%s jobs on %s", q.State, where)
	switch {
	case n == 0 && more:
		return fmt.Sprintf("none of the %s jobs this page read on %s matched; more to read (next page below)", q.State, where)
	case n == 0:
		what = "no " + what
	}
	return what + " (--state pending, scheduled, processing or failed lists the others; a completed job is shown by job ID while its result is kept)"
}

// queryFlags adds to fs the flags that select a page of jobs; the query
// they fill is read after Parse.
func queryFlags(fs *flag.FlagSet, limit int) *admin.JobQuery {
	q := &admin.JobQuery{}
	fs.StringVar(&q.Route, "route", "", "only this route (default: every route)")
	fs.StringVar(&q.Task, "task", "", "only jobs of this task")
	fs.StringVar(&q.Text, "q", "", "only jobs whose id or last error holds this text (listings)")
	fs.IntVar(&q.Limit, "limit", limit, "at most this many jobs a page (1 to 500)")
	fs.StringVar(&q.Cursor, "cursor", "", "the next page's cursor, printed after a page")
	return q
}

// pageTable prints a page's rows and, when there is more, the cursor of
// the next page.
func pageTable(e *Env, next string, header []string, rows [][]string) error {
	if err := table(e.Stdout, header, rows); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(e.Stdout, "more: --cursor %s\n", next)
	}
	return nil
}

// cmdPause is `pause ROUTE` and `resume ROUTE`.
func cmdPause(pause bool) Command {
	name := map[bool]string{true: "pause", false: "resume"}[pause]
	return func(e *Env, args []string) error {
		fs := e.Flags("ROUTE...: " + map[bool]string{true: "stop every worker from taking jobs of the routes (enqueues go on)", false: "let workers take jobs of the routes again"}[pause])
		pos, err := Parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usageError{fmt.Errorf("want a route to %s", name)}
		}
		c, err := e.open()
		if err != nil {
			return err
		}
		defer c.Close()
		for _, r := range pos {
			act := c.Resume
			if pause {
				act = c.Pause
			}
			if err := act(e.Ctx, r); err != nil {
				return err
			}
		}
		fmt.Fprintf(e.Stdout, "%sd %s\n", name, strings.Join(pos, ", "))
		return nil
	}
}

// listing is what a listing command prints: its table's rows, its JSON, the
// cursor of the next page ("" when there is none) and, when it has one, a
// caption above the table saying what it lists (the table is left out when
// it has no rows: the caption says so).
type listing struct {
	rows    [][]string
	js      any
	next    string
	caption string
}

// lister reads a listing.
type lister func(e *Env, a admin.Admin) (listing, error)

// listCommand prints what the lister that setup returns reads (setup adds
// the command's own flags): its JSON with --json, else a table for people
// and, when there is more, the next page's cursor.
func listCommand(usage string, header []string, setup func(fs *flag.FlagSet) lister) Command {
	return func(e *Env, args []string) error {
		fs := e.Flags(usage)
		get := setup(fs)
		asJSON := fs.Bool("json", false, "print JSON")
		if err := parseNoArgs(fs, args); err != nil {
			return err
		}
		c, err := e.open()
		if err != nil {
			return err
		}
		defer c.Close()
		l, err := get(e, c)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.Stdout, l.js)
		}
		if l.caption != "" {
			fmt.Fprintln(e.Stdout, l.caption)
			if len(l.rows) == 0 {
				return pageTable(e, l.next, nil, nil)
			}
		}
		return pageTable(e, l.next, header, l.rows)
	}
}

// static is the setup of a listing without flags of its own: list reads
// the values, which --json prints, and row makes each one's row.
func static[T any](list func(admin.Admin, context.Context) ([]T, error), row func(T) []string) func(*flag.FlagSet) lister {
	return func(*flag.FlagSet) lister {
		return func(e *Env, a admin.Admin) (listing, error) {
			vs, err := list(a, e.Ctx)
			if err != nil {
				return listing{}, err
			}
			return listing{rows: admin.Map(vs, row), js: vs}, nil
		}
	}
}

var cmdQueues = listCommand("[--json]: jobs per route in each place, whether it is paused, its oldest pending job and the workers that take it; with an outbox, its backlog first",
	[]string{"ROUTE", "HIGH", "NORMAL", "LOW", "SCHEDULED", "ACTIVE", "DLQ", "OLDEST", "STATE", "WORKERS"},
	withOutboxCaption(static(admin.Admin.Routes, func(r bananastype.Route) []string {
		workers := fmt.Sprint(r.Workers)
		if r.Workers == 0 {
			workers = "none" // its jobs wait for ever: make it stand out
		}
		state, oldest := "running", "-"
		if r.Paused {
			state = "PAUSED"
		}
		if r.LimitRunning > 0 || r.HeldKeys > 0 {
			state += fmt.Sprintf(", %d keyed running, %d held by rate", r.LimitRunning, r.HeldKeys)
		}
		if !r.OldestPending.IsZero() {
			oldest = admin.FormatDuration(r.OldestPendingAge.Round(time.Second))
		}
		return []string{r.Route, fmt.Sprint(r.High), fmt.Sprint(r.Normal), fmt.Sprint(r.Low), fmt.Sprint(r.Scheduled),
			fmt.Sprint(r.Active), fmt.Sprint(r.Dead), oldest, state, workers}
	})))

var cronList = listCommand("cron list [--json]",
	[]string{"NAME", "SPEC", "TZ", "ROUTE", "LAST RUN", "NEXT RUN", "RUNS", "LAST ERROR"},
	static(admin.Admin.Cron, func(s bananastype.Schedule) []string {
		return []string{s.Name, s.Spec, orDash(s.TZ), s.Route, stamp(s.LastRun), stamp(s.NextRun), fmt.Sprint(s.RunCount), orDash(firstLine(s.LastError))}
	}))

func cmdCron(e *Env, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(e.Stdout, "usage: cron list [--json]: the registered cron entries and their state\n       cron run NAME: enqueue one job of a cron entry now; its schedule stays as it is")
		return nil
	}
	switch {
	case len(args) > 0 && args[0] == "run":
		return cronRun(e, args[1:])
	case len(args) == 0 || args[0] != "list":
		return usageError{errors.New("want: cron list, or cron run NAME")}
	}
	return cronList(e, args[1:])
}

// cronRun is `cron run NAME`: it prints the id of the job it enqueued.
func cronRun(e *Env, args []string) error {
	e.Name = "cron run"
	pos, err := Parse(e.Flags("NAME: enqueue one job of the cron entry now; its schedule stays as it is"), args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want one cron entry name, got %d", len(pos))}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	id, err := c.RunCron(e.Ctx, pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, id)
	return nil
}

var cmdWorkers = listCommand("[--json]: live workers, from their heartbeats",
	[]string{"ID", "HOST", "PID", "MODE", "ROUTES", "CONCURRENCY", "IN FLIGHT", "LAST BEAT"},
	static(admin.Admin.Workers, func(w admin.Worker) []string {
		return []string{w.ID, w.Host, fmt.Sprint(w.PID), orDash(w.Mode), orDash(strings.Join(w.Routes, ",")), fmt.Sprint(w.Concurrency), fmt.Sprint(w.InFlight), stamp(w.LastBeat)}
	}))

// cmdCancelWaiting is `cancel ROUTE [--task T] [--json]`.
func cmdCancelWaiting(e *Env, args []string) error {
	return routeJobsAction(e, args, "cancel every pending and scheduled job of the route (running jobs go on)",
		"canceled", "canceled %d waiting job(s) of route %s\n", Conn.CancelWaiting)
}

// cmdRunScheduled is `run-scheduled ROUTE [--task T] [--json]`.
func cmdRunScheduled(e *Env, args []string) error {
	return routeJobsAction(e, args, "run every scheduled job of the route (delayed, or waiting for its retry) now",
		"run", "%d scheduled job(s) of route %s pending now\n", Conn.RunScheduled)
}

// routeJobsAction runs `ROUTE [--task T] [--json]`: do acts on the jobs
// of the route (of the task, when given) and says how many, which is
// printed with say (the count, then the route) or as JSON under key.
func routeJobsAction(e *Env, args []string, what, key, say string, do func(Conn, context.Context, string, string) (int, error)) error {
	fs := e.Flags("ROUTE [--task T] [--json]: " + what)
	task := fs.String("task", "", "only the jobs of this task")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want one route, got %d argument(s)", len(pos))}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	n, err := do(c, e.Ctx, pos[0], *task)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, map[string]any{"route": pos[0], key: n})
	}
	fmt.Fprintf(e.Stdout, say, n, pos[0])
	return nil
}

// uniqueOpts are enqueue's flags of a unique key: --unique (its ttl),
// --unique-by, --unique-until and --debounce, passed as the submission's
// fields for the admin layer to check (a bad value exits 2 naming it).
type uniqueOpts struct {
	ttl, by, until, debounce *string
}

func uniqueFlags(fs *flag.FlagSet) uniqueOpts {
	return uniqueOpts{
		ttl:      fs.String("unique", "", "a unique key held this long at most (e.g. 1h): a job of the same key is refused while it is held"),
		by:       fs.String("unique-by", "", "with --unique: the fields of the args the key is made of, comma-separated (default: all)"),
		until:    fs.String("unique-until", "", "with --unique: started, completed or ended (default ended)"),
		debounce: fs.String("debounce", "", "with --unique: wait this long; an enqueue of the key meanwhile replaces the job's args and moves its start"),
	}
}

func (u uniqueOpts) into(s *admin.Submission) {
	s.Unique, s.UniqueBy, s.UniqueUntil, s.Debounce = *u.ttl, *u.by, *u.until, *u.debounce
}
