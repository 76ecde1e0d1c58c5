package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// cmdWorkflow is `workflow ID [--json]`, and its verbs.
func cmdWorkflow(e *Env, args []string) error {
	if len(args) > 0 && args[0] == "signal" {
		return cmdWorkflowSignal(e, args[1:])
	}
	if ok, err := runVerb(e, "workflow", args); ok {
		return err
	}
	fs := e.Flags("ID [--json] | " + strings.Join(verbsOf("workflow"), "|") + " ID: show a workflow and its steps, or act on it")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("want one workflow ID")}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := c.Workflow(e.Ctx, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, w)
	}
	return printWorkflow(e.Stdout, w)
}

// printWorkflow writes a workflow for people: its status and times, its
// result once completed, then its steps.
func printWorkflow(out io.Writer, w *bananastype.Workflow) error {
	fmt.Fprintf(out, "workflow %s: %s (created %s, ended %s)\n", w.ID, w.Status, stamp(w.CreatedAt), stamp(w.EndedAt))
	if w.Status == "completed" {
		fmt.Fprintf(out, "result: %s\n", jsonOrDash(w.Result))
	}
	fmt.Fprintln(out)
	rows := make([][]string, len(w.Steps))
	var waits [][]string
	for i, s := range w.Steps {
		task := s.Name
		switch {
		case s.Wait != nil && s.Wait.Kind == bananastype.WaitTimer:
			task = "(timer)"
			waits = append(waits, []string{s.Label, "timer", s.Wait.Duration.String(), stamp(s.Wait.Due), "-"})
		case s.Wait != nil:
			task = "(signal)"
			timeout := "none"
			if s.Wait.Duration > 0 {
				timeout = s.Wait.Duration.String()
			}
			waits = append(waits, []string{s.Label, "signal " + s.Wait.Signal, timeout, stamp(s.Wait.Due), stamp(s.Wait.Received)})
		case task == "":
			task = "(gather)"
		}
		rows[i] = []string{s.Label, task, orDash(s.JobID), string(s.Status), orDash(strings.Join(s.After, ",")), orDash(firstLine(s.Error))}
	}
	if err := table(out, []string{"STEP", "TASK", "JOB", "STATUS", "AFTER", "ERROR"}, rows); err != nil || len(waits) == 0 {
		return err
	}
	fmt.Fprintln(out)
	return table(out, []string{"WAIT", "FOR", "DURATION", "DUE", "RECEIVED"}, waits)
}

// cmdWorkflows is `workflows [--status S] [--task T] [--limit N] [--cursor
// C] [--json]`: a page of the list of workflows, newest first.
var cmdWorkflows = listCommand("[--status S] [--task T] [--limit N] [--cursor C] [--json]: list the workflows, newest first, a page at a time",
	[]string{"ID", "STATUS", "TASK", "CREATED", "ENDED", "FAILED STEP"},
	func(fs *flag.FlagSet) lister {
		q := &admin.WorkflowQuery{}
		fs.StringVar(&q.Status, "status", "", "only workflows of this status: pending, running, completed, failed or canceled")
		fs.StringVar(&q.Task, "task", "", "only workflows whose final step is of this task")
		fs.IntVar(&q.Limit, "limit", 50, "at most this many workflows a page (1 to 500)")
		fs.StringVar(&q.Cursor, "cursor", "", "the next page's cursor, printed after a page")
		return func(e *Env, a admin.Admin) (listing, error) {
			page, err := a.Workflows(e.Ctx, *q)
			if err != nil {
				return listing{}, err
			}
			rows := admin.Map(page.Workflows, func(w bananastype.Workflow) []string {
				task := w.Task
				if task == "" {
					task = "(gather)"
				}
				return []string{w.ID, w.Status, task, stamp(w.CreatedAt), stamp(w.EndedAt), orDash(w.FailedStep)}
			})
			caption := ""
			if len(rows) == 0 {
				caption = "no workflows"
				if q.Status != "" {
					caption = "no " + q.Status + " workflows"
				}
				if page.Next != "" {
					caption += " on this page; more to read (next page below)"
				}
			}
			return listing{rows: rows, js: page, next: page.Next, caption: caption}, nil
		}
	})

// cmdWorkflowSignal is `workflow signal ID NAME JSON [--json]`: send the
// signal NAME to a workflow, JSON its payload.
func cmdWorkflowSignal(e *Env, args []string) error {
	e.Name = "workflow signal"
	fs := e.Flags("ID NAME JSON [--json]: send the signal NAME to a workflow, JSON its payload: the first of its waits of that name completes with it")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usageError{fmt.Errorf("want a workflow ID, a signal NAME and its JSON payload, got %d argument(s)", len(pos))}
	}
	if !json.Valid([]byte(pos[2])) {
		return usageError{fmt.Errorf("payload %q is not valid JSON", clipArg(pos[2]))}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SignalWorkflow(e.Ctx, pos[0], pos[1], json.RawMessage(pos[2])); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, map[string]string{"workflow": pos[0], "signal": pos[1]})
	}
	fmt.Fprintf(e.Stdout, "signal %s sent to workflow %s\n", pos[1], pos[0])
	return nil
}

// clipArg is s, cut to 80 bytes for a message.
func clipArg(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
