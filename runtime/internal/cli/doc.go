// Package cli is the command line of an application binary (runtime.Main):
// the commands and their usage, flags in the CLI's own words, confirmation
// on a terminal, tables for people and --json for programs, and the exit
// statuses.
//
// # What it owns, and what it must not know
//
// It owns parsing and printing, and how the admin layer's errors become an
// exit status (exitStatus). The admin commands (the adminCommands table) call
// an admin.Admin — the runtime's Inspector, which the program's App opens —
// and print its values: a table from their fields, or with --json the value
// itself, whose JSON is the API's. The commands that run the runtime (worker,
// scheduler, api) are given to Run by the runtime as App.Commands. Each
// command is declared once, as a Spec with its lines in the help: `app help`
// prints the tables, so the help names every command and nothing else. An
// action on one job or workflow by its id (`job cancel ID`) is a row of the
// verbs table, which its noun's command runs and whose help lines it lists.
//
// It must not know Redis or the runtime's types: it imports runtime/admin
// for the values and errors, never runtime.
package cli
