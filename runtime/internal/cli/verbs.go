package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Verb is an action on one job or workflow by its id, `NOUN VERB ID
// [--json]`: a row of verbs, from which the noun's command finds it and the
// help lists it, so that an action on a job or a workflow is declared once,
// here.
type Verb struct {
	Noun, Name string
	// Help says what it does, after "NOUN VERB ID: ".
	Help string
	// Do acts on id and returns what to tell a person, and what --json
	// prints.
	Do func(e *Env, c Conn, id string) (said string, js any, err error)
}

var verbs = []Verb{
	{"job", "cancel", "cancel a job: one not started is not run, a running one has its context canceled", func(e *Env, c Conn, id string) (string, any, error) {
		st, err := c.Cancel(e.Ctx, id)
		if st == "processing" {
			return fmt.Sprintf("cancel of %s asked: it is running, and the worker holding it cancels its context", id), admin.Canceled{ID: id, Status: st}, err
		}
		return "canceled " + id, admin.Canceled{ID: id, Status: st}, err
	}},
	{"job", "delete", "delete a pending or scheduled job for good", func(e *Env, c Conn, id string) (string, any, error) {
		return "deleted " + id, map[string]string{"deleted": id}, c.Delete(e.Ctx, id)
	}},
	{"job", "run", "run a scheduled job (delayed, or waiting for its retry) now, its attempts as they were", func(e *Env, c Conn, id string) (string, any, error) {
		return "pending now: " + id, map[string]string{"run": id}, c.RunNow(e.Ctx, id)
	}},
	{"workflow", "cancel", "cancel a workflow's steps not yet run, and ask its running ones to stop", func(e *Env, c Conn, id string) (string, any, error) {
		w, err := c.CancelWorkflow(e.Ctx, id)
		if err != nil {
			return "", nil, err
		}
		said := fmt.Sprintf("canceled workflow %s: its steps not yet run are canceled, its running steps' jobs asked to stop", w.ID)
		if w.Status == "completed" {
			said = fmt.Sprintf("workflow %s had completed: nothing to cancel", w.ID)
		}
		return withWorkflow(said, w), w, nil
	}},
	{"workflow", "retry", "run a workflow's failed and canceled steps again", func(e *Env, c Conn, id string) (string, any, error) {
		w, n, err := c.RetryWorkflow(e.Ctx, id)
		if err != nil {
			return "", nil, err
		}
		said := fmt.Sprintf("workflow %s: %d step(s) run again", w.ID, n)
		if n == 0 {
			said = fmt.Sprintf("workflow %s: no step had failed or been canceled: nothing to run again", w.ID)
		}
		return withWorkflow(said, w), w, nil
	}},
}

// withWorkflow is said, then w as printWorkflow writes it.
func withWorkflow(said string, w *bananastype.Workflow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", said)
	_ = printWorkflow(&b, w)
	return strings.TrimSuffix(b.String(), "\n")
}

// verbsOf are the verbs of noun, by name.
func verbsOf(noun string) []string {
	var out []string
	for _, v := range verbs {
		if v.Noun == noun {
			out = append(out, v.Name)
		}
	}
	return out
}

// nounHelp is the help's lines of noun's command: showing one (what show
// says it does), and each of its verbs.
func nounHelp(noun, show string) [][2]string {
	lines := [][2]string{{noun + " ID", show}}
	for _, v := range verbs {
		if v.Noun == noun {
			lines = append(lines, [2]string{noun + " " + v.Name + " ID", v.Help + " [--json]"})
		}
	}
	return lines
}

// runVerb runs the verb args[0] of noun, and reports false when args name
// none.
func runVerb(e *Env, noun string, args []string) (bool, error) {
	if len(args) == 0 || !slices.Contains(verbsOf(noun), args[0]) {
		return false, nil
	}
	var v Verb
	for _, v = range verbs {
		if v.Noun == noun && v.Name == args[0] {
			break
		}
	}
	e.Name = noun + " " + v.Name
	fs := e.Flags("ID [--json]: " + v.Help)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args[1:])
	if err != nil {
		return true, err
	}
	if len(pos) != 1 {
		return true, usageError{fmt.Errorf("want one %s ID after %s", noun, v.Name)}
	}
	c, err := e.open()
	if err != nil {
		return true, err
	}
	defer c.Close()
	said, js, err := v.Do(e, c, pos[0])
	if err != nil {
		return true, err
	}
	if *asJSON {
		return true, printJSON(e.Stdout, js)
	}
	fmt.Fprintln(e.Stdout, said)
	return true, nil
}
