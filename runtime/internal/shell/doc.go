// Package shell is the process around the runtime behind runtime.Main: the
// configuration, the logger, the listeners and the commands that run the
// runtime (worker, scheduler, api), as the command line's App.
//
// # What it owns, and what it must not know
//
// It owns the configuration (Config, LoadConfig: the environment variables,
// the flags that override them, their checks and errors naming the
// variable, the Mode constants); the logger of LOG_LEVEL and LOG_FORMAT; the
// listeners of API_PORT and METRICS_PORT (where they listen, the lines they
// log, their graceful shutdown); and the flow of the worker, scheduler and
// api commands (flags over the environment, the start and exit lines,
// WORKER_JOB_TYPES checked against the registered tasks). The command line
// itself, its admin commands and its exit statuses are package cli's.
//
// It must not know the runtime's types: package runtime imports it, and
// gives it what it needs through Program, a narrow seam — the defaults and
// the Redis URL check of the configuration (Rules), and Connect, whose
// Session is the admin layer (an admin.Admin), the HTTP and metrics
// handlers, the registered task names and a worker of the configuration to
// run. Redis, the Client and the Worker stay on the runtime's side.
package shell
