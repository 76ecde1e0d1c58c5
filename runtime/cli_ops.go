package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// printJSON writes v indented, for programs.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns, for people.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func cmdEnqueue(e *env, args []string) error {
	fs := e.flags("NAME JSON [--route R] [--priority P] [--delay D] [--wait] [--json]: enqueue a registered task with JSON args")
	route := fs.String("route", "", "route (default: the task's)")
	prio := fs.String("priority", "", "high, normal or low (default: the task's)")
	delay := fs.Duration("delay", 0, "run after this delay")
	wait := fs.Bool("wait", false, "wait for the result and print it as JSON")
	timeout := fs.Duration("timeout", 0, "with --wait: give up after this long (0: never)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{fmt.Errorf("want NAME and JSON, got %d argument(s)", len(pos))}
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer e.close()
	w := e.registry(c, WorkerOptions{})
	h := w.handlers[pos[0]]
	if h == nil {
		return usageError{fmt.Errorf("no task named %q (registered: %s)", pos[0], strings.Join(w.Tasks(), ", "))}
	}
	var opts []Option
	if *route != "" {
		if err := queue.CheckRoute(*route); err != nil {
			return usageError{fmt.Errorf("--route: %w", err)}
		}
		opts = append(opts, Route(*route))
	}
	if *prio != "" {
		if !queue.ValidPriority(*prio) {
			return usageError{fmt.Errorf("--priority %s: use high, normal or low", *prio)}
		}
		opts = append(opts, WithPriority(Priority(*prio)))
	}
	if *delay > 0 {
		opts = append(opts, Delay(*delay))
	}
	id, err := h.enqueueJSON(e.ctx, c, []byte(pos[1]), opts)
	if err != nil {
		if errors.Is(err, ErrDuplicate) {
			return err
		}
		return usageError{err}
	}
	jobRoute := h.info().Route
	if *route != "" {
		jobRoute = *route
	}
	if takers, err := c.routeTakers(e.ctx); err == nil && takers[jobRoute] == 0 {
		if *wait && strings.HasPrefix(e.cfg.RedisURL, "mem://") {
			return fmt.Errorf("job %s cannot finish: REDIS_URL=mem:// is this process's own in-memory server, and no worker runs in this process; "+
				"use a Redis server that a worker of route %s reaches", id, jobRoute)
		}
		fmt.Fprintf(e.stderr, "warning: no live worker takes route %s (from their heartbeats); job %s waits until one does\n", jobRoute, id)
	}
	if !*wait {
		if *asJSON {
			return printJSON(e.stdout, map[string]string{"id": id})
		}
		fmt.Fprintln(e.stdout, id)
		return nil
	}
	ctx := e.ctx
	if *timeout > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	res, err := h.await(ctx, c, id)
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if _, none := res.(None); none {
		res = nil // a task without a result: null, not an empty object
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"id": id, "result": res})
	}
	return printJSON(e.stdout, res)
}

func cmdJob(e *env, args []string) error {
	if len(args) > 0 && (args[0] == "cancel" || args[0] == "delete") {
		e.name = "job " + args[0]
		return cmdJobAction(e, args[0], args[1:])
	}
	fs := e.flags("ID [--json] | cancel ID | delete ID: show, cancel or delete a job")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("want one job ID")}
	}
	in, err := e.inspector()
	if err != nil {
		return err
	}
	defer e.close()
	info, err := in.Job(e.ctx, pos[0])
	if err != nil {
		return err
	}
	view := in.jobView(info)
	if *asJSON {
		return printJSON(e.stdout, view)
	}
	rows := [][]string{
		{"id", info.ID}, {"task", info.Name}, {"route", info.Route}, {"priority", string(info.Priority)},
		{"status", string(info.Status)}, {"description", orDash(info.Description)},
		{"attempts", fmt.Sprintf("%d (max retries %d)", info.Attempts, info.MaxRetries)},
		{"timeout", timeoutText(info.Timeout)},
		{"error", orDash(info.Error)}, {"created", stamp(info.CreatedAt)}, {"scheduled", stamp(info.ScheduledAt)},
		{"started", stamp(info.StartedAt)}, {"failed runs ended", orDash(strings.Join(views(info.FailedAt, stamp), ", "))},
		{"finished", stamp(info.FinishedAt)},
		{"args", jsonOrDash(view.Args)}, {"result", jsonOrDash(view.Result)},
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// timeoutText is a job's timeout as enqueued; 0 takes the worker's.
func timeoutText(d time.Duration) string {
	if d == 0 {
		return "the worker's default"
	}
	return d.String()
}

// jsonOrDash is a JSON value for a table: "-" for null.
func jsonOrDash(b json.RawMessage) string {
	if string(b) == "null" {
		return "-"
	}
	return string(b)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdQueues(e *env, args []string) error {
	fs := e.flags("[--json]: jobs per route in each place, whether it is paused, its oldest pending job and the workers that take it")
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", pos[0])}
	}
	in, err := e.inspector()
	if err != nil {
		return err
	}
	defer e.close()
	routes, err := in.Routes(e.ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, views(routes, routeView))
	}
	rows := make([][]string, len(routes))
	for i, r := range routes {
		workers := fmt.Sprint(r.Workers)
		if r.Workers == 0 {
			workers = "none" // its jobs wait for ever: make it stand out
		}
		state, oldest := "running", "-"
		if r.Paused {
			state = "PAUSED"
		}
		if !r.OldestPending.IsZero() {
			oldest = r.OldestPendingAge.Round(time.Second).String()
		}
		rows[i] = []string{r.Route, fmt.Sprint(r.High), fmt.Sprint(r.Normal), fmt.Sprint(r.Low), fmt.Sprint(r.Scheduled),
			fmt.Sprint(r.Active), fmt.Sprint(r.Dead), oldest, state, workers}
	}
	return table(e.stdout, []string{"ROUTE", "HIGH", "NORMAL", "LOW", "SCHEDULED", "ACTIVE", "DEAD", "OLDEST", "STATE", "WORKERS"}, rows)
}

func cmdDLQ(e *env, args []string) error {
	const usage = "usage: dlq list [--route R] [--task T] [--q TEXT] [--limit N] [--cursor C] [--json] | dlq replay ID | dlq replay --all [--route R] [--task T] | dlq purge [--route R] [--task T] [--older-than D] [--yes]"
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		return usageError{errors.New("want a subcommand: list, replay ID, replay --all or purge")}
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(e.stdout, usage)
		return nil
	}
	sub, args := args[0], args[1:]
	e.name = "dlq " + sub
	fs := e.flags("[flags]")
	route := fs.String("route", "", "only this route (default: every route)")
	task := fs.String("task", "", "only dead jobs of this task")
	text := fs.String("q", "", "list: only dead jobs whose id or error holds this text")
	limit := fs.Int("limit", 100, "list: at most this many (1 to 500)")
	cursor := fs.String("cursor", "", "list: the next page's cursor, printed after a page")
	all := fs.Bool("all", false, "replay: every dead job (of --route and --task)")
	older := fs.Duration("older-than", 0, "purge: only jobs that died longer ago than this")
	yes := fs.Bool("yes", false, "purge: do not ask for confirmation on a terminal")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if sub != "list" && sub != "replay" && sub != "purge" {
		return usageError{fmt.Errorf("unknown dlq subcommand %q: want list, replay or purge", sub)}
	}
	in, err := e.inspector()
	if err != nil {
		return err
	}
	defer e.close()
	switch sub {
	case "list":
		page, err := in.Jobs(e.ctx, JobQuery{Route: *route, State: StatusFailed, Task: *task, Text: *text, Limit: *limit, Cursor: *cursor})
		if err != nil {
			return usageIfBadQuery(err)
		}
		if *asJSON {
			return printJSON(e.stdout, in.pageView(page))
		}
		rows := make([][]string, len(page.Jobs))
		for i, d := range page.Jobs {
			rows[i] = []string{d.ID, d.Route, d.Name, fmt.Sprint(d.Attempts), stamp(d.FinishedAt), firstLine(d.Error)}
		}
		if err := table(e.stdout, []string{"ID", "ROUTE", "TASK", "ATTEMPTS", "DIED", "ERROR"}, rows); err != nil {
			return err
		}
		if page.Next != "" {
			fmt.Fprintf(e.stdout, "more: --cursor %s\n", page.Next)
		}
		return nil
	case "replay":
		switch {
		case *all && len(pos) == 0:
			n, err := in.ReplayDead(e.ctx, *route, *task)
			if err != nil {
				return usageIfBadQuery(err)
			}
			fmt.Fprintf(e.stdout, "replayed %d job(s)\n", n)
			return nil
		case !*all && len(pos) == 1:
			if err := in.Replay(e.ctx, pos[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "replayed %s\n", pos[0])
			return nil
		}
		return usageError{errors.New("want replay ID or replay --all")}
	}
	if *older < 0 {
		return usageError{fmt.Errorf("--older-than %s: want a duration >= 0", *older)}
	}
	if !*yes && e.terminal {
		routes, err := in.Routes(e.ctx)
		if err != nil {
			return err
		}
		var dead int64
		var names []string
		for _, r := range routes {
			if *route == "" || r.Route == *route {
				dead += r.Dead
				names = append(names, r.Route)
			}
		}
		if dead == 0 {
			fmt.Fprintln(e.stdout, "purged 0 job(s)")
			return nil
		}
		what := fmt.Sprintf("%d dead job(s) of route(s) %s", dead, strings.Join(names, ", "))
		if *task != "" || *older > 0 {
			what = fmt.Sprintf("the dead jobs%s%s among the %s", map[bool]string{true: " of task " + *task}[*task != ""],
				map[bool]string{true: " that died over " + older.String() + " ago"}[*older > 0], what)
		}
		if !e.confirm("purge " + what + " for good?") {
			fmt.Fprintln(e.stdout, "nothing purged")
			return nil
		}
	}
	n, err := in.PurgeDead(e.ctx, *route, *task, *older)
	if err != nil {
		return usageIfBadQuery(err)
	}
	fmt.Fprintf(e.stdout, "purged %d job(s)\n", n)
	return nil
}

func cmdCron(e *env, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(e.stdout, "usage: cron list [--json]: the registered cron entries and their state")
		return nil
	}
	if len(args) == 0 || args[0] != "list" {
		return usageError{errors.New("want: cron list")}
	}
	fs := e.flags("cron list [--json]")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args[1:]); err != nil {
		return err
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer e.close()
	sts, err := e.registry(c, WorkerOptions{}).CronStatus(e.ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, views(sts, cronView))
	}
	rows := make([][]string, len(sts))
	for i, s := range sts {
		rows[i] = []string{s.Name, s.Spec, orDash(s.TZ), s.Route, stamp(s.LastRun), stamp(s.NextRun), fmt.Sprint(s.RunCount), orDash(firstLine(s.LastError))}
	}
	return table(e.stdout, []string{"NAME", "SPEC", "TZ", "ROUTE", "LAST RUN", "NEXT RUN", "RUNS", "LAST ERROR"}, rows)
}

func cmdWorkers(e *env, args []string) error {
	fs := e.flags("[--json]: live workers, from their heartbeats")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer e.close()
	ws, err := c.Workers(e.ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, ws)
	}
	rows := make([][]string, len(ws))
	for i, w := range ws {
		rows[i] = []string{w.ID, w.Host, fmt.Sprint(w.PID), orDash(w.Mode), orDash(strings.Join(w.Routes, ",")), fmt.Sprint(w.Concurrency), fmt.Sprint(w.InFlight), stamp(w.LastBeat)}
	}
	return table(e.stdout, []string{"ID", "HOST", "PID", "MODE", "ROUTES", "CONCURRENCY", "IN FLIGHT", "LAST BEAT"}, rows)
}
