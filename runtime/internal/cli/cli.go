package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/bananas-go/bananas/runtime/admin"
)

// Exit statuses of Run.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// printUsage writes the program's help from the command tables: the
// program's own commands (App.Commands), then the admin commands.
func printUsage(w io.Writer, app App) {
	fmt.Fprintf(w, "usage: app [command] [flags]\n\ncommands:\n")
	for _, l := range helpLines(app) {
		fmt.Fprintf(w, "  %-27s %s\n", l[0], l[1])
	}
	fmt.Fprintf(w, "\nEvery command takes -h, and --json where it prints.\n")
}

// helpLines are the help's lines of every command, help itself last.
func helpLines(app App) [][2]string {
	var lines [][2]string
	for _, c := range append(app.Commands(), adminCommands...) {
		lines = append(lines, c.Help...)
	}
	return append(lines, [2]string{"help", "this text"})
}

// printEnvironment lists the configuration variables of the program.
func printEnvironment(w io.Writer, vars []EnvVar) {
	if len(vars) == 0 {
		return
	}
	fmt.Fprintln(w, "\nenvironment (a worker's or scheduler's flag overrides each: 'worker -h' names them):")
	rows := make([][]string, len(vars))
	for i, v := range vars {
		rows[i] = []string{"  " + v.Name, v.Help}
	}
	_ = table(w, nil, rows)
}

// IO is where a command reads and writes. Terminal says Stdin is one: only
// then does a command ask for confirmation.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Terminal       bool
}

// Run runs the command of args (worker when there is none) and returns the
// exit status: 0 on success, 1 on failure, 2 on a usage or configuration
// error.
func Run(ctx context.Context, args []string, rw IO, app App) int {
	cmd := "worker"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" {
		printUsage(rw.Stdout, app)
		printEnvironment(rw.Stdout, app.Environment())
		return ExitOK
	}
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") && cmd == "worker" {
		// No command named: the program's help, then the default command's flags.
		printUsage(rw.Stdout, app)
		printEnvironment(rw.Stdout, app.Environment())
		fmt.Fprintln(rw.Stdout)
	}
	run, ok := commandNamed(app.Commands(), cmd)
	if !ok {
		run, ok = commandNamed(adminCommands, cmd)
	}
	if !ok {
		fmt.Fprintf(rw.Stderr, "unknown command %q\n", cmd)
		printUsage(rw.Stderr, app)
		return ExitUsage
	}
	if err := app.Configure(); err != nil {
		fmt.Fprintln(rw.Stderr, "configuration:", err)
		return ExitUsage
	}
	e := &Env{Ctx: ctx, IO: rw, Name: cmd, app: app}
	err := run(e, args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	code, msg := exitStatus(err)
	fmt.Fprintf(rw.Stderr, "%s: %s\n", cmd, msg)
	return code
}

// exitStatus is the exit status of a command that returned err, and what it
// says after the command's name, without the "bananas: " that the admin
// layer's errors start with (the name says where it came from).
//
// The command line was wrong (2) for a usage error and for what the admin
// layer refused as input: a bad value (BadInput), args over the payload
// limit (TooLarge), or a route or cron entry named that does not exist
// (NotFound of an input field). A job not found is not the command line's
// fault: ids come from elsewhere and jobs expire. The rest is 1.
func exitStatus(err error) (int, string) {
	var ue usageError
	if errors.As(err, &ue) {
		return ExitUsage, admin.Message(ue.error)
	}
	p := admin.Classify(err)
	switch {
	case p.Class == admin.BadInput, p.Class == admin.TooLarge, p.Class == admin.NotFound && p.Field != "":
		return ExitUsage, p.Msg
	case errors.Is(err, admin.ErrKeyBusy): // on_busy=drop: the job is refused, as bad input would be
		return ExitUsage, p.Msg
	}
	return ExitFailure, p.Msg
}

// Env is what every command gets: its context, where it reads and writes,
// and its name (as the usage and errors say it: "dlq purge").
type Env struct {
	Ctx context.Context
	IO
	Name string
	app  App
}

// open is the admin commands' connection to the admin layer, every action
// taken through it recorded in the audit log as taken by cli@<host>.
func (e *Env) open() (Conn, error) {
	c, err := e.app.Open(e.Ctx)
	if err == nil && c.Admin != nil {
		c.Admin = admin.Audited(c.Admin, cliWho(), "cli")
	}
	return c, err
}

// Confirm asks question on the terminal and reports whether the answer is
// yes. Off a terminal (a script, a pipe, CI) there is nobody to ask:
// commands that confirm take that as yes, as their --yes flag does.
func (e *Env) Confirm(question string) bool {
	if !e.Terminal {
		return true
	}
	fmt.Fprintf(e.Stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(e.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// Flags returns a flag set for the command whose -h prints usage to stdout.
func (e *Env) Flags(usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(e.Name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		fs.SetOutput(e.Stdout)
		fmt.Fprintf(e.Stdout, "usage: %s %s\n", e.Name, usage)
		fs.PrintDefaults()
		fs.SetOutput(e.Stderr)
	}
	return fs
}

// usageError is a mistake in the command line or configuration: exit 2.
type usageError struct{ error }

// Usage marks err as a usage error: the command exits 2.
func Usage(err error) error { return usageError{err} }

// Parse parses flags that may come before, between or after positional
// arguments, and returns the positionals.
//
// A mistake is returned as one usage error in the CLI's words (Run prints
// it once); the flag package would print its own message and the whole
// usage first. -h prints the usage.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, err
			}
			return nil, usageError{flagError(fs, err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

var badFlagValue = regexp.MustCompile(`^invalid value "(.*)" for flag -(\S+): (.*)$`)

// flagError rewords a flag package error as the CLI speaks: --delay soon: not
// a duration, e.g. 30s, 5m or 1h; and says where the usage is.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		why := m[3]
		// A flag of fs.Func is no Getter: its function says what it wants.
		if g, ok := fs.Lookup(m[2]).Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				why = "not a duration, e.g. 30s, 5m or 1h"
			}
		}
		msg = fmt.Sprintf("--%s %s: %s", m[2], m[1], why)
	} else if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = fmt.Sprintf("unknown flag --%s", name)
	}
	return fmt.Errorf("%s (%s -h lists the flags)", msg, fs.Name())
}

// printJSON writes v indented, for programs.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns, for people.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header != nil {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = oneCell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// oneCell is s with its control characters (a tab, a newline, an escape)
// as spaces: a cell's text comes from jobs (a description, an error, a
// progress note) and must stay in its cell and its row.
func oneCell(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// stamp is a time as the tables show it: RFC 3339 in UTC, "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// firstLine is s up to its first newline: an error's message without the
// stack recorded after it.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
