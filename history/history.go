// Package history is the vocabulary of the task history: what one finished
// job's row holds (Row), what a store of rows does (Store), and how a
// program that imports a store's package opens it from a URL (Register,
// Open), as database/sql drivers are registered.
//
// # What it owns, and what it must not know
//
// It owns the row's shape and the Store contract that every store keeps:
// writing a batch is idempotent (a row is keyed by its job id, life and
// attempt, and a second write of the same row stores nothing), and a search
// returns rows newest first. It must not know Redis, PostgreSQL, HTTP or
// task types: args and results arrive here already as JSON. The worker
// moves finished jobs from Redis into a Store (package runtime); a store's
// own package (history/postgres) knows its database.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"time"
)

// Status is how a job ended: one of the three below.
type Status string

const (
	Completed Status = "completed"
	Failed    Status = "failed" // dead-lettered: its last run failed
	Canceled  Status = "canceled"
)

// Valid reports whether s is one of the three statuses.
func (s Status) Valid() bool { return s == Completed || s == Failed || s == Canceled }

// Row is one end of one job. A job has one row per end: a job dead-lettered,
// replayed and then completed has two, told apart by Life.
type Row struct {
	ID string
	// Life counts the job's replays before this end (0 for a job never
	// replayed); Attempt is the run that ended it, 1-based, or 0 for a job
	// canceled before it ever ran. With ID they key the row.
	Life, Attempt int
	Task          string
	Route         string
	Priority      string
	Status        Status
	Args          json.RawMessage // the job's args as JSON; null when none
	Result        json.RawMessage // a completed job's result as JSON; null when none
	Error         string          // why a failed or canceled job ended
	EnqueuedAt    time.Time
	StartedAt     time.Time // zero when the job never started (canceled while waiting)
	EndedAt       time.Time
	Worker        string // the worker that recorded the end, when known
	// Sanitized says what a store changed to keep the row, "" when it kept
	// it as given: text with NUL bytes or invalid UTF-8, JSON its database
	// refuses. A row is never refused for its content: that would hold
	// back every later end of its route.
	Sanitized string
}

// Query selects rows. Zero fields select everything.
type Query struct {
	Task   string
	Route  string
	Status Status
	Since  time.Time // EndedAt >= Since
	Until  time.Time // EndedAt < Until
	Text   string    // in the id or the error
	// Args selects on args fields: dotted path -> value, compared as text
	// ("customer.id" -> "42").
	Args   map[string]string
	Cursor string // from the previous page's Next
	Limit  int    // 0: the store's default
}

// Page is one page of a search, newest first; Next is "" on the last page.
type Page struct {
	Rows []Row
	Next string
}

// Store keeps rows.
type Store interface {
	// Write stores rows; a row whose key (ID, Life, Attempt) is stored
	// already is left as it is, so a batch written twice is stored once.
	Write(ctx context.Context, rows []Row) error
	// Job returns the rows of one job, newest first (none: an empty slice).
	Job(ctx context.Context, id string) ([]Row, error)
	// Search returns one page of the rows q selects, newest first.
	Search(ctx context.Context, q Query) (Page, error)
	// DropBefore deletes the rows that ended before t.
	DropBefore(ctx context.Context, t time.Time) error
	Close()
}

// ErrBadCursor matches the error of a Search whose cursor is not one a
// search of the same store returned.
var ErrBadCursor = errors.New("history: the cursor is not one a search returned (pass a page's Next unchanged)")

// ErrBadQuery matches the error of a Search that the store refused for a
// value of the query it cannot compare (text it cannot hold): the query's
// fault, not the store's.
var ErrBadQuery = errors.New("history: the query holds a value the store cannot search for")

// ErrSearchTimeout matches the error of a Search that took longer than the
// store allows one: too wide a search, to narrow (a shorter window, a
// task, a route, a status, a longer text).
var ErrSearchTimeout = errors.New("history: the search took too long and was stopped")

// ErrNoStore matches the error of Open for a URL whose scheme no imported
// package registered.
var ErrNoStore = errors.New("history: no store registered for the URL's scheme")

// Migrator is a Store that creates and migrates its own schema; Open's
// caller migrates it before use when it is one.
type Migrator interface {
	Migrate(ctx context.Context) error
}

// Opener opens a store from its URL.
type Opener func(ctx context.Context, url string) (Store, error)

var (
	mu      sync.Mutex
	openers = map[string]Opener{}
)

// Register makes a store's package open URLs of scheme (its init calls it).
func Register(scheme string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("history: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Open opens the store that rawURL names by its scheme, registered by the
// store's package (import _ "github.com/bananas-go/bananas/history/postgres"
// for postgres:// URLs).
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("history: %q is not a URL such as postgres://user@host/db", rawURL)
	}
	mu.Lock()
	open, ok := openers[u.Scheme]
	known := make([]string, 0, len(openers))
	for s := range openers {
		known = append(known, s)
	}
	mu.Unlock()
	if !ok {
		sort.Strings(known)
		return nil, fmt.Errorf("%w: %s:// (registered: %v); import _ \"github.com/bananas-go/bananas/history/postgres\" in the program's main package", ErrNoStore, u.Scheme, known)
	}
	return open(ctx, rawURL)
}
