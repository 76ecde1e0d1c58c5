package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// cmdHistory is `history` (a search of the task history, a page at a time)
// and `history migrate`.
func cmdHistory(e *Env, args []string) error {
	if len(args) > 0 && args[0] == "migrate" {
		e.Name = "history migrate"
		return historyMigrate(e, args[1:])
	}
	return historySearch(e, args)
}

var historySearch = listCommand("[--task T] [--route R] [--status S] [--since T] [--until T] [--q TEXT] [--arg field=value ...] [--limit N] [--cursor C] [--json]: "+
	"search the task history: the jobs that ended for good (completed, failed, canceled), newest end first, kept after Redis lets them go\n"+
	"       history migrate: create or migrate the task history's schema",
	[]string{"ENDED", "ID", "TASK", "ROUTE", "STATUS", "ATTEMPT", "ERROR"},
	func(fs *flag.FlagSet) lister {
		q := &admin.HistoryQuery{}
		fs.StringVar(&q.Task, "task", "", "only jobs of this task")
		fs.StringVar(&q.Route, "route", "", "only jobs of this route")
		fs.StringVar((*string)(&q.Status), "status", "", "only jobs that ended so: completed, failed or canceled")
		fs.Func("since", "only jobs that ended at or after this: an RFC 3339 time, or a duration back from now such as 24h", timeFlag(&q.Since))
		fs.Func("until", "only jobs that ended before this: an RFC 3339 time, or a duration back from now", timeFlag(&q.Until))
		fs.StringVar(&q.Text, "q", "", "only jobs whose id or error holds this text")
		fs.Func("arg", "only jobs whose args hold value at field (a dotted path: customer.id=42); repeat for several", func(s string) error {
			field, value, ok := strings.Cut(s, "=")
			if !ok || field == "" {
				return fmt.Errorf("want field=value, such as customer.id=42")
			}
			if q.Args == nil {
				q.Args = map[string]string{}
			}
			q.Args[field] = value
			return nil
		})
		fs.IntVar(&q.Limit, "limit", 50, "at most this many jobs a page (1 to 500)")
		fs.StringVar(&q.Cursor, "cursor", "", "the next page's cursor, printed after a page")
		return func(e *Env, a admin.Admin) (listing, error) {
			page, err := a.History(e.Ctx, *q)
			if err != nil {
				return listing{}, historyRefusal(err)
			}
			rows := make([][]string, len(page.Jobs))
			for i, r := range page.Jobs {
				rows[i] = []string{stamp(r.FinishedAt), r.ID, r.Name, r.Route, string(r.Status), fmt.Sprint(r.Attempts), orDash(firstLine(r.Error))}
			}
			return listing{rows: rows, js: page, next: page.Next, caption: historyCaption(page, len(rows))}, nil
		}
	})

// historyCaption says which window of ends a page searched, as a search
// without --since reads only the last admin.HistoryWindow: a job that ended
// before it is not missing, it is outside the window.
func historyCaption(page bananastype.HistoryPage, rows int) string {
	if page.Since.IsZero() { // a store that does not say its window
		if rows == 0 {
			return "no job in the task history matches"
		}
		return ""
	}
	window := "ended since " + stamp(page.Since)
	if !page.Until.IsZero() {
		window += ", before " + stamp(page.Until)
	}
	if rows == 0 {
		return "no job in the task history matches (searched jobs " + window + ")"
	}
	return "jobs " + window + ":"
}

// timeFlag reads an RFC 3339 time, or a duration back from now, into t.
func timeFlag(t *time.Time) func(string) error {
	return func(s string) error {
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			*t = time.Now().Add(-d)
			return nil
		}
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return errors.New("want an RFC 3339 time such as 2026-11-26T22:00:00Z, or a duration back from now such as 24h")
		}
		*t = v
		return nil
	}
}

// historyRefusal is the admin layer's refusal of a history command as the
// command line says it: a program without a history is a configuration
// error (exit 2), a refused value one of the flag that gave it.
func historyRefusal(err error) error {
	if errors.Is(err, admin.ErrNoHistory) {
		return usageError{err}
	}
	p := admin.Classify(err)
	if p.Class == admin.BadInput && strings.HasPrefix(p.Field, "args.") {
		return usageError{fmt.Errorf("--arg %s: %s", strings.TrimPrefix(p.Field, "args."), p.Msg)}
	}
	return flagRefusal(err, "status", "limit", "until")
}

// historyMigrate runs the history store's migration and says what it did.
func historyMigrate(e *Env, args []string) error {
	fs := e.Flags("[--json]: create or migrate the task history's schema (HISTORY_URL); safe to run again")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	migrated, err := c.MigrateHistory(e.Ctx)
	if err != nil {
		return historyRefusal(err)
	}
	if *asJSON {
		return printJSON(e.Stdout, map[string]bool{"migrated": migrated})
	}
	if !migrated {
		fmt.Fprintln(e.Stdout, "the task history's store keeps no schema of its own: nothing to migrate")
		return nil
	}
	fmt.Fprintln(e.Stdout, "the task history's schema is created and up to date")
	return nil
}
