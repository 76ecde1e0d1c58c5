package admin

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/bananas-go/bananas/bananastype"
)

// Outbox is the transactional outbox's backlog (OUTBOX_URL): the jobs
// committed in application transactions that no relay has moved into
// Redis yet, as its database holds them now. JSON: {"pending",
// "oldest_at" (RFC 3339 or null), "oldest_age_ms", "relayed", "tasks":
// [{"task", "pending", "oldest_at", "oldest_age_ms", "registered"}]}.
type Outbox struct {
	Pending int64
	// OldestAt is when the oldest row was written (zero when none waits);
	// OldestAge how long it has waited: how far the relays are behind.
	OldestAt  time.Time
	OldestAge time.Duration
	// Relayed counts the rows this process's relays moved into Redis.
	Relayed int64
	// Tasks are the rows by task, sorted by name.
	Tasks []OutboxTask
}

// OutboxTask is the outbox's rows of one task. Registered is false for a
// task no worker of this program registers: its relays keep its rows,
// for a relay of a program that registers it.
type OutboxTask struct {
	Task       string
	Pending    int64
	OldestAt   time.Time
	OldestAge  time.Duration
	Registered bool
}

// Unregistered counts the rows of tasks no worker of this program
// registers.
func (o Outbox) Unregistered() int64 {
	var n int64
	for _, t := range o.Tasks {
		if !t.Registered {
			n += t.Pending
		}
	}
	return n
}

type outboxTaskWire struct {
	Task       string           `json:"task"`
	Pending    int64            `json:"pending"`
	OldestAt   bananastype.Time `json:"oldest_at"`
	OldestAge  int64            `json:"oldest_age_ms"`
	Registered bool             `json:"registered"`
}

type outboxWire struct {
	Pending   int64            `json:"pending"`
	OldestAt  bananastype.Time `json:"oldest_at"`
	OldestAge int64            `json:"oldest_age_ms"`
	Relayed   int64            `json:"relayed"`
	Tasks     []outboxTaskWire `json:"tasks"`
}

// MarshalJSON writes the outbox in the CLI's and the API's shape.
func (o Outbox) MarshalJSON() ([]byte, error) {
	w := outboxWire{Pending: o.Pending, OldestAt: bananastype.Time(o.OldestAt), OldestAge: o.OldestAge.Milliseconds(), Relayed: o.Relayed, Tasks: []outboxTaskWire{}}
	for _, t := range o.Tasks {
		w.Tasks = append(w.Tasks, outboxTaskWire{Task: t.Task, Pending: t.Pending, OldestAt: bananastype.Time(t.OldestAt), OldestAge: t.OldestAge.Milliseconds(), Registered: t.Registered})
	}
	return json.Marshal(w)
}

// OutboxReader reads an outbox's backlog: what a relay reports to the
// client it moves jobs into (runtime.Client.ReportOutbox).
type OutboxReader interface {
	Outbox(ctx context.Context) (Outbox, error)
}

// OutboxAdmin is an Admin that can read the outbox's backlog: the
// Inspector is one. The CLI, the API and the dashboard check for it, so
// that a surface without an outbox shows none.
type OutboxAdmin interface {
	Outbox(ctx context.Context) (Outbox, error)
}

// ErrNoOutbox matches the error of Outbox in a program without an outbox.
var ErrNoOutbox = errors.New("bananas: this program has no transactional outbox: set OUTBOX_URL and import _ \"github.com/bananas-go/bananas/outbox\"")

// Outbox reads the backlog of the client's outbox, ErrNoOutbox when it has
// none.
func (in *Inspector) Outbox(ctx context.Context) (Outbox, error) {
	r, ok := in.rt.(interface{ Outbox() OutboxReader })
	if !ok || r.Outbox() == nil {
		return Outbox{}, ErrNoOutbox
	}
	return r.Outbox().Outbox(ctx)
}
