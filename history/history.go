// Package history is the vocabulary of the task history: what a store of
// finished jobs does (Store; a row is a bananastype.Job, one end of a
// job: the same type whether Redis or the history holds the job), and how a
// program that imports a store's package opens it from a URL (Register,
// Open), as database/sql drivers are registered.
//
// # What it owns, and what it must not know
//
// It owns the Store contract that every store keeps:
// writing a batch is idempotent (a row is keyed by its job id, life and
// attempt, and a second write of the same row stores nothing), and a search
// returns rows newest first. It must not know Redis, PostgreSQL, HTTP or
// task types: args and results arrive here already as JSON. The worker
// moves finished jobs from Redis into a Store (package runtime); a store's
// own package (history/postgres) knows its database.
package history

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// Query selects rows. Zero fields select everything.
type Query struct {
	Task   string
	Route  string
	Status queue.Status // completed, failed or canceled (Status.Finished)
	Since  time.Time    // EndedAt >= Since
	Until  time.Time    // EndedAt < Until
	Text   string       // in the id or the error
	// Args selects on args fields: dotted path -> value, compared as text
	// ("customer.id" -> "42").
	Args   map[string]string
	Cursor string // from the previous page's Next
	Limit  int    // 0: the store's default
}

// Page is one page of a search, newest first; Next is "" on the last page.
type Page struct {
	Rows []bananastype.Job
	Next string
}

// Store keeps rows: the ends of jobs, each a bananastype.Job with what
// the end left of it — ID, Life, Attempts (the run that ended it, 1-based,
// or 0 for a job canceled before it ever ran), Name, Route, Priority,
// Status (completed, failed or canceled), Args and ResultJSON (JSON, nil
// when none), Error, CreatedAt (enqueued), StartedAt (zero when it never
// started), FinishedAt (ended), Worker, and Sanitized: what the store
// changed to keep the row (text with NUL bytes or invalid UTF-8, JSON its
// database refuses), "" when it kept it as given. A row is never refused
// for its content: that would hold back every later end of its route.
type Store interface {
	// Write stores rows; a row whose key (ID, Life, Attempts) is stored
	// already is left as it is, so a batch written twice is stored once.
	Write(ctx context.Context, rows []bananastype.Job) error
	// Job returns the rows of one job, newest first (none: an empty slice).
	Job(ctx context.Context, id string) ([]bananastype.Job, error)
	// Search returns one page of the rows q selects, newest first.
	Search(ctx context.Context, q Query) (Page, error)
	// DropBefore deletes the rows that ended before t.
	DropBefore(ctx context.Context, t time.Time) error
	Close()
}

// AuditWriter is a Store that keeps the audit log's entries too (the
// operators' actions, bananastype.AuditEntry). WriteAudit stores e; an
// entry whose ID is stored already is left as it is.
type AuditWriter interface {
	WriteAudit(ctx context.Context, e bananastype.AuditEntry) error
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
