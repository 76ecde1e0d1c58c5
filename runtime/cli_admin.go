package runtime

import (
	"errors"
	"fmt"
	"strings"
)

// usageIfBadQuery makes a bad flag value that the admin layer refused
// (ErrBadQuery) a usage error, exit 2; other errors stay failures.
func usageIfBadQuery(err error) error {
	if errors.Is(err, ErrBadQuery) {
		return usageError{errors.New(trimBananas(err))}
	}
	return err
}

func cmdJobs(e *env, args []string) error {
	fs := e.flags("[--route R] [--state S] [--task T] [--q TEXT] [--limit N] [--cursor C] [--newest] [--json]: list jobs, a page at a time")
	route := fs.String("route", "", "only this route (default: every route)")
	state := fs.String("state", "pending", "pending, scheduled, processing or failed")
	task := fs.String("task", "", "only jobs of this task")
	text := fs.String("q", "", "only jobs whose id or last error holds this text")
	limit := fs.Int("limit", 50, "at most this many jobs (1 to 500)")
	cursor := fs.String("cursor", "", "the next page's cursor, printed after a page")
	newest := fs.Bool("newest", false, "most recent first")
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
	page, err := in.Jobs(e.ctx, JobQuery{Route: *route, State: Status(*state), Task: *task, Text: *text, Limit: *limit, Cursor: *cursor, Newest: *newest})
	if err != nil {
		return usageIfBadQuery(err)
	}
	if *asJSON {
		return printJSON(e.stdout, in.pageView(page))
	}
	rows := make([][]string, len(page.Jobs))
	for i, j := range page.Jobs {
		when := stamp(j.CreatedAt)
		switch j.Status {
		case StatusScheduled:
			when = stamp(j.ScheduledAt)
		case StatusFailed:
			when = stamp(j.FinishedAt)
		}
		rows[i] = []string{j.ID, j.Route, j.Name, string(j.Priority), string(j.Status), fmt.Sprint(j.Attempts), when, orDash(firstLine(j.Error))}
	}
	if err := table(e.stdout, []string{"ID", "ROUTE", "TASK", "PRIORITY", "STATUS", "ATTEMPTS", "WHEN", "ERROR"}, rows); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(e.stdout, "more: --cursor %s\n", page.Next)
	}
	return nil
}

// cmdJobAction is `job cancel ID` and `job delete ID`.
func cmdJobAction(e *env, action string, args []string) error {
	fs := e.flags(action + " ID")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want one job ID after %s", action)}
	}
	in, err := e.inspector()
	if err != nil {
		return err
	}
	defer e.close()
	id := pos[0]
	switch action {
	case "cancel":
		st, err := in.Cancel(e.ctx, id)
		if err != nil {
			return errors.New(trimBananas(err))
		}
		if st == StatusProcessing {
			fmt.Fprintf(e.stdout, "cancel of %s asked: it is running, and the worker holding it cancels its context\n", id)
			return nil
		}
		fmt.Fprintf(e.stdout, "canceled %s\n", id)
	case "delete":
		if err := in.Delete(e.ctx, id); err != nil {
			return errors.New(trimBananas(err))
		}
		fmt.Fprintf(e.stdout, "deleted %s\n", id)
	}
	return nil
}

// cmdPause is `pause ROUTE` and `resume ROUTE`.
func cmdPause(pause bool) func(e *env, args []string) error {
	name := map[bool]string{true: "pause", false: "resume"}[pause]
	return func(e *env, args []string) error {
		fs := e.flags("ROUTE...: " + map[bool]string{true: "stop every worker from taking jobs of the routes (enqueues go on)", false: "let workers take jobs of the routes again"}[pause])
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usageError{fmt.Errorf("want a route to %s", name)}
		}
		in, err := e.inspector()
		if err != nil {
			return err
		}
		defer e.close()
		for _, r := range pos {
			act := in.Resume
			if pause {
				act = in.Pause
			}
			if err := act(e.ctx, r); err != nil {
				return usageIfBadQuery(err)
			}
		}
		fmt.Fprintf(e.stdout, "%sd %s\n", name, strings.Join(pos, ", "))
		return nil
	}
}
