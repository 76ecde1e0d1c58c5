package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// scheduleUsage is `schedules`'s help: one line per verb.
const scheduleUsage = `usage: schedules list [--json]: the schedules made at run time, then the cron entries of the code (source code)
       schedules set ID NAME JSON --cron SPEC [--tz Z --jitter D --overlap P --catch-up D --route R --priority P --start T --end T --paused] [--json]: create or change a schedule
       schedules delete ID: delete a schedule; it fires nothing more
       schedules pause ID | resume ID: stop a schedule (or a cron entry of the code) firing (it keeps its next tick), or let it fire again
       schedules run ID: enqueue one job of a schedule now; its ticks stay as they are
       schedules backfill ID --from T --to T [--json]: enqueue each tick of the range once, oldest first`

var scheduleList = listCommand("schedules list [--json]",
	[]string{"ID", "SOURCE", "TASK", "CRON", "TZ", "OVERLAP", "STATE", "LAST RUN", "NEXT RUN", "RUNS", "SKIPPED", "LAST JOB"},
	static(admin.Admin.Schedules, func(s bananastype.Schedule) []string {
		state := "active"
		if s.Paused {
			state = "PAUSED"
		}
		overlap := string(s.Overlap)
		if s.Source == bananastype.SourceCode {
			overlap = "-"
		}
		task := s.Name
		if !s.Registered {
			task += " (NO WORKER)" // no live worker registers the task
		}
		return []string{s.ID, s.Source, task, s.Spec, orDash(s.TZ), overlap, state, stamp(s.LastRun), stamp(s.NextRun),
			fmt.Sprint(s.RunCount), fmt.Sprint(s.Skipped), orDash(s.LastJob)}
	}))

func cmdSchedules(e *Env, args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("want: schedules list|set|delete|pause|resume|run|backfill")}
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(e.Stdout, scheduleUsage)
		return nil
	}
	verb, rest := args[0], args[1:]
	e.Name = "schedules " + verb
	switch verb {
	case "list":
		return scheduleList(e, rest)
	case "set":
		return scheduleSet(e, rest)
	case "delete", "pause", "resume", "run":
		return scheduleAct(e, verb, rest)
	case "backfill":
		return scheduleBackfill(e, rest)
	}
	return usageError{fmt.Errorf("unknown verb %q: want schedules list|set|delete|pause|resume|run|backfill", verb)}
}

// scheduleSet is `schedules set ID NAME JSON --cron SPEC ...`.
func scheduleSet(e *Env, args []string) error {
	fs := e.Flags("ID NAME JSON --cron SPEC [--tz Z] [--jitter D] [--overlap P] [--catch-up D] [--route R] [--priority P] [--start T] [--end T] [--paused] [--json]: create or change a schedule of task NAME with JSON args")
	var s admin.ScheduleSubmission
	fs.StringVar(&s.Cron, "cron", "", "five cron fields, six with seconds, or a descriptor such as @every 1s")
	fs.StringVar(&s.TZ, "tz", "", "the IANA time zone the spec is read in (default UTC)")
	fs.StringVar(&s.Jitter, "jitter", "", "each tick fires up to this late (a Go duration)")
	fs.StringVar(&s.Overlap, "overlap", "", "skip (default), buffer_one, allow or cancel_running")
	fs.StringVar(&s.CatchUp, "catch-up", "", "after an outage, the missed ticks this recent run (a Go duration)")
	fs.StringVar(&s.Route, "route", "", "route (default: the task's)")
	fs.StringVar(&s.Priority, "priority", "", "high, normal or low (default: the task's)")
	fs.BoolVar(&s.Paused, "paused", false, "create it paused")
	start := fs.String("start", "", "no tick before this RFC 3339 time")
	end := fs.String("end", "", "no tick after this RFC 3339 time")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usageError{fmt.Errorf("want ID NAME JSON, got %d argument(s)", len(pos))}
	}
	s.Name, s.Args = pos[1], json.RawMessage(pos[2])
	if !json.Valid(s.Args) {
		return usageError{fmt.Errorf("JSON args %q are not JSON", pos[2])}
	}
	for _, t := range []struct {
		flag, v string
		to      **time.Time
	}{{"start", *start, &s.Start}, {"end", *end, &s.End}} {
		if t.v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, t.v)
		if err != nil {
			return usageError{fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-11-26T22:00:00Z", t.flag, t.v)}
		}
		*t.to = &at
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	got, err := c.PutSchedule(e.Ctx, pos[0], s)
	if err != nil {
		return codeRefusal(err)
	}
	if *asJSON {
		return printJSON(e.Stdout, got)
	}
	fmt.Fprintf(e.Stdout, "%s: %s %s, next run %s\n", got.ID, got.Name, got.Spec, stamp(got.NextRun))
	return nil
}

// scheduleAct is `schedules delete|pause|resume|run ID`.
func scheduleAct(e *Env, verb string, args []string) error {
	pos, err := Parse(e.Flags("ID"), args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want one schedule id, got %d", len(pos))}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	id := pos[0]
	switch verb {
	case "delete":
		err = codeRefusal(c.DeleteSchedule(e.Ctx, id))
	case "pause", "resume":
		err = c.PauseSchedule(e.Ctx, id, verb == "pause")
	case "run":
		var job string
		if job, err = c.RunSchedule(e.Ctx, id); err == nil {
			fmt.Fprintln(e.Stdout, job)
		}
	}
	return err
}

// codeRefusal makes the refusal to change or delete a cron entry of the
// code a usage error (exit 2): the id names something this command does
// not change.
func codeRefusal(err error) error {
	if errors.Is(err, admin.ErrCodeSchedule) {
		return usageError{err}
	}
	return err
}

// scheduleBackfill is `schedules backfill ID --from T --to T`: it prints
// the ids it enqueued, one a line.
func scheduleBackfill(e *Env, args []string) error {
	fs := e.Flags("ID --from T --to T [--json]: enqueue each tick of the range before the schedule's next tick once, oldest first")
	from := fs.String("from", "", "the range's start, RFC 3339")
	to := fs.String("to", "", "the range's end (included), RFC 3339")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want one schedule id, got %d", len(pos))}
	}
	var at [2]time.Time
	for i, f := range []struct{ flag, v string }{{"from", *from}, {"to", *to}} {
		if at[i], err = time.Parse(time.RFC3339, f.v); err != nil {
			return usageError{fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-11-26T22:00:00Z", f.flag, f.v)}
		}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	ids, err := c.BackfillSchedule(e.Ctx, pos[0], at[0], at[1])
	if err != nil {
		return err
	}
	if *asJSON {
		if ids == nil {
			ids = []string{}
		}
		return printJSON(e.Stdout, map[string][]string{"ids": ids})
	}
	for _, id := range ids {
		fmt.Fprintln(e.Stdout, id)
	}
	return nil
}
