package runtime

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

// Main is the whole application binary: it reads the configuration from the
// environment (flags override), registers the packages' tasks, and runs the
// subcommand of os.Args — worker (the default), scheduler, enqueue, job,
// queues, dlq, cron list, workers. It exits 0 on success, 1 on failure and
// 2 on a usage or configuration error; SIGINT and SIGTERM shut a worker down
// gracefully.
//
//	func main() { runtime.Main(tasks.Register, billing.Register) }
func Main(register ...func(*Worker)) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := RunCommand(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, register...)
	stop()
	os.Exit(code)
}

// Exit statuses of RunCommand.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// usageError is a mistake in the command line or configuration: exit 2.
type usageError struct{ error }

const mainUsage = `usage: %[1]s [command] [flags]

commands:
  worker                          run jobs (the default)
  scheduler                       run cron entries and the promoter, no jobs
  enqueue NAME JSON [--route R --priority P --delay D --wait]
                                  enqueue a task with JSON args
  api                             serve the HTTP API and /metrics (API_PORT, default 8080), no jobs
  job ID | job cancel ID | job delete ID
                                  show, cancel or delete a job
  jobs [--route R --state S --task T --q TEXT]
                                  list jobs, a page at a time
  queues                          jobs per route in each place, paused, workers
  pause ROUTE | resume ROUTE      stop or restart every worker taking a route
  dlq list | replay ID | replay --all | purge [--yes]
                                  the dead-letter queue
  cron list                       cron entries and their state
  workers                         live workers, from their heartbeats

Every command takes -h, and --json where it prints. Configuration comes from the
environment (REDIS_URL, BANANAS_NAMESPACE, WORKER_MODE, WORKER_CONCURRENCY, ...);
flags of the same name override it (see 'worker -h').
`

// RunCommand is Main without the process around it: arguments, environment
// and output are passed in, and the exit status is returned.
func RunCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, register ...func(*Worker)) int {
	cmd := "worker"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || (len(args) == 0 && cmd == "-h") {
		fmt.Fprintf(stdout, mainUsage, "app")
		return ExitOK
	}
	run, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "unknown command %q\n", cmd)
		fmt.Fprintf(stderr, mainUsage, "app")
		return ExitUsage
	}
	cfg, err := LoadConfig(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "configuration:", err)
		return ExitUsage
	}
	e := &env{ctx: ctx, cfg: cfg, stdout: stdout, stderr: stderr, register: register, name: cmd,
		stdin: os.Stdin, terminal: term.IsTerminal(int(os.Stdin.Fd()))}
	err = run(e, args)
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\n", cmd, ue.error)
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return ExitFailure
	}
}

// env is what every command gets.
type env struct {
	ctx            context.Context
	cfg            Config
	stdout, stderr io.Writer
	register       []func(*Worker)
	name           string
	client         *Client
	// stdin answers confirm's questions when it is a terminal.
	stdin    io.Reader
	terminal bool
}

// confirm asks question on the terminal and reports whether the answer is
// yes. Off a terminal (a script, a pipe, CI) there is nobody to ask: commands
// that confirm take that as yes, as their --yes flag does.
func (e *env) confirm(question string) bool {
	if !e.terminal {
		return true
	}
	fmt.Fprintf(e.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(e.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

func (e *env) logger() *slog.Logger {
	opts := &slog.HandlerOptions{Level: e.cfg.LogLevel}
	if e.cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts))
}

// connect opens the client (once) with the configured URL and namespace.
func (e *env) connect() (*Client, error) {
	if e.client != nil {
		return e.client, nil
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, e.cfg.RedisURL, WithNamespace(e.cfg.Namespace), DefaultRetries(e.cfg.MaxRetries))
	if err != nil {
		return nil, err
	}
	e.client = c
	return c, nil
}

func (e *env) close() {
	if e.client != nil {
		_ = e.client.Close()
	}
}

// registry builds a worker (not run) holding every registered task.
func (e *env) registry(c *Client, opts WorkerOptions) *Worker {
	w := NewWorker(c, opts)
	for _, r := range e.register {
		r(w)
	}
	return w
}

// inspector is the admin layer of the command's client and the program's tasks.
func (e *env) inspector() (*Inspector, error) {
	c, err := e.connect()
	if err != nil {
		return nil, err
	}
	return NewInspector(c, e.register...), nil
}

// flags returns a flag set for the command whose -h prints usage to stdout.
func (e *env) flags(usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(e.name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fs.SetOutput(e.stdout)
		fmt.Fprintf(e.stdout, "usage: %s %s\n", e.name, usage)
		fs.PrintDefaults()
		fs.SetOutput(e.stderr)
	}
	return fs
}

// parse parses flags that may come before, between or after positional
// arguments, and returns the positionals.
//
// A mistake is returned as one usageError in the CLI's words (the caller
// prints it once); the flag package would print its own message and the whole
// usage first. -h prints the usage.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
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

var commands map[string]func(*env, []string) error

func init() {
	commands = map[string]func(*env, []string) error{
		"worker":    cmdWorker,
		"scheduler": cmdScheduler,
		"enqueue":   cmdEnqueue,
		"job":       cmdJob,
		"queues":    cmdQueues,
		"dlq":       cmdDLQ,
		"cron":      cmdCron,
		"workers":   cmdWorkers,
		"api":       cmdAPI,
		"jobs":      cmdJobs,
		"pause":     cmdPause(true),
		"resume":    cmdPause(false),
	}
}

var badFlagValue = regexp.MustCompile(`^invalid value "(.*)" for flag -(\S+): (.*)$`)

// flagError rewords a flag package error as the CLI speaks: --delay soon: not
// a duration, e.g. 30s, 5m or 1h; and says where the usage is.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		why := m[3]
		if f := fs.Lookup(m[2]); f != nil {
			if _, ok := f.Value.(flag.Getter).Get().(time.Duration); ok {
				why = "not a duration, e.g. 30s, 5m or 1h"
			}
		}
		msg = fmt.Sprintf("--%s %s: %s", m[2], m[1], why)
	} else if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = fmt.Sprintf("unknown flag --%s", name)
	}
	return fmt.Errorf("%s (%s -h lists the flags)", msg, fs.Name())
}
