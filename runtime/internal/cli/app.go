package cli

import (
	"context"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// App is what Run needs from the program: its configuration, checked before
// any command runs, the admin layer for the admin commands, and the
// commands it adds (worker, scheduler, api).
type App interface {
	// Configure reads the configuration; an error is a usage error (exit
	// 2), printed after "configuration:".
	Configure() error
	// Open connects to Redis with the configuration: the admin layer of
	// the admin commands, closed when the command ends.
	Open(ctx context.Context) (Conn, error)
	// Commands are the program's own commands, in the help's order, each
	// with its lines in the help (the help lists them from here).
	Commands() []Spec
	// Environment are the configuration variables, for the help.
	Environment() []EnvVar
}

// Conn is an open connection to the admin layer: the Admin the commands
// call, and what the command line needs to know of the connection beside.
type Conn struct {
	admin.Admin
	// Embedded says Redis is this process's own in-memory server
	// (REDIS_URL=mem://), which no worker of another process reaches.
	Embedded bool
	// Close closes the connection.
	Close func() error
	// RotateKeys reseals waiting and scheduled jobs' args under the
	// newest key (`keys rotate`, keys.go); nil when the program cannot.
	RotateKeys func(ctx context.Context) (queue.ResealCount, error)
}

// EnvVar is one configuration variable and what it sets.
type EnvVar struct{ Name, Help string }

// Command runs one command with its arguments (after its name).
type Command func(e *Env, args []string) error

// Spec declares a command and its lines in the program's help (usage, what
// it does): a command is declared once, and `app help` lists the commands
// from their Specs, so that the help names every command and nothing else.
type Spec struct {
	Name string
	Run  Command
	Help [][2]string
}
