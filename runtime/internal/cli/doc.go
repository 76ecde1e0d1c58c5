// Package cli is the command line of an application binary (runtime.Main):
// the commands and their usage, flags in the CLI's own words, confirmation
// on a terminal, tables for people and --json for programs, and the exit
// statuses.
//
// # What it owns, and what it must not know
//
// It owns parsing and printing. It must not know Redis, package queue or
// the runtime's types: the admin commands (enqueue, job, jobs, queues,
// pause, resume, dlq, cron list, workers) ask a Backend — the runtime's
// admin layer, runtime.Inspector, behind an adapter — for plain values and
// their JSON, and the commands that run the runtime (worker, scheduler,
// api) are given to Run by the runtime as Commands.
package cli
