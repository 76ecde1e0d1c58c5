package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// cmdDLQ is `dlq list | replay | purge`: the flags of all three, then the
// subcommand named.
func cmdDLQ(e *Env, args []string) error {
	const usage = "usage: dlq list [--route R] [--task T] [--q TEXT] [--limit N] [--cursor C] [--json] | dlq replay ID | dlq replay --all [--route R] [--task T] | dlq purge [--route R] [--task T] [--older-than D] [--yes]"
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		return usageError{errors.New("want a subcommand: list, replay ID, replay --all or purge")}
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(e.Stdout, usage)
		return nil
	}
	sub, args := args[0], args[1:]
	e.Name = "dlq " + sub
	fs := e.Flags("[flags]")
	f := dlqFlags{
		query:  queryFlags(fs, 100),
		all:    fs.Bool("all", false, "replay: every failed job in the dead-letter queue (of --route and --task)"),
		older:  fs.Duration("older-than", 0, "purge: only jobs that died longer ago than this"),
		yes:    fs.Bool("yes", false, "purge: do not ask for confirmation on a terminal"),
		asJSON: fs.Bool("json", false, "print JSON"),
	}
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	run := map[string]func(*Env, admin.Admin, dlqFlags, []string) error{"list": dlqList, "replay": dlqReplay, "purge": dlqPurge}[sub]
	if run == nil {
		return usageError{fmt.Errorf("unknown dlq subcommand %q: want list, replay or purge", sub)}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	return run(e, c, f, pos)
}

// dlqFlags are the flags every dlq subcommand parses; each reads its own.
type dlqFlags struct {
	query    *admin.JobQuery
	all, yes *bool
	older    *time.Duration
	asJSON   *bool
}

func dlqList(e *Env, a admin.Admin, f dlqFlags, _ []string) error {
	q := *f.query
	q.State = "failed"
	page, err := a.Jobs(e.Ctx, q)
	if err != nil {
		return err
	}
	if *f.asJSON {
		return printJSON(e.Stdout, page)
	}
	rows := make([][]string, len(page.Jobs))
	for i, d := range page.Jobs {
		rows[i] = []string{d.ID, d.Route, d.Name, fmt.Sprint(d.Attempts), stamp(d.FinishedAt), firstLine(d.Error)}
	}
	return pageTable(e, page.Next, []string{"ID", "ROUTE", "TASK", "ATTEMPTS", "DIED", "ERROR"}, rows)
}

func dlqReplay(e *Env, a admin.Admin, f dlqFlags, pos []string) error {
	switch {
	case *f.all && len(pos) == 0:
		n, err := a.ReplayDead(e.Ctx, f.query.Route, f.query.Task)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "replayed %d job(s)\n", n)
		return nil
	case !*f.all && len(pos) == 1:
		if err := a.Replay(e.Ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "replayed %s\n", pos[0])
		return nil
	}
	return usageError{errors.New("want replay ID or replay --all")}
}

func dlqPurge(e *Env, a admin.Admin, f dlqFlags, _ []string) error {
	route, task, older := f.query.Route, f.query.Task, *f.older
	if older < 0 {
		return usageError{fmt.Errorf("--older-than %s: want a duration >= 0", older)}
	}
	if !*f.yes && e.Terminal {
		what, err := purgeWhat(e, a, route, task, older)
		if err != nil || what == "" {
			return err
		}
		if !e.Confirm("purge " + what + " for good?") {
			fmt.Fprintln(e.Stdout, "nothing purged")
			return nil
		}
	}
	n, err := a.PurgeDead(e.Ctx, route, task, older)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "purged %d job(s)\n", n)
	return nil
}

// purgeWhat says what a purge would delete, for its confirmation; "" (with
// "purged 0 job(s)" printed) when there is nothing dead to purge.
func purgeWhat(e *Env, a admin.Admin, route, task string, older time.Duration) (string, error) {
	routes, err := a.Routes(e.Ctx)
	if err != nil {
		return "", err
	}
	var dead int64
	var names []string
	for _, r := range routes {
		if route == "" || r.Route == route {
			dead += r.Dead
			names = append(names, r.Route)
		}
	}
	if dead == 0 {
		fmt.Fprintln(e.Stdout, "purged 0 job(s)")
		return "", nil
	}
	what := fmt.Sprintf("%d failed job(s) in the dead-letter queue of route(s) %s", dead, strings.Join(names, ", "))
	if task != "" || older > 0 {
		what = fmt.Sprintf("the failed jobs%s%s among the %s", map[bool]string{true: " of task " + task}[task != ""],
			map[bool]string{true: " that died over " + admin.FormatDuration(older) + " ago"}[older > 0], what)
	}
	return what, nil
}
