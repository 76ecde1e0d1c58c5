// Package tasks holds the batch example's tasks: events indexed per tenant
// with one bulk call per batch, and scores computed many at a time, each
// job's result its own.
package tasks

//go:generate go run github.com/bananas-go/bananas/bananagen

import (
	"context"
	"fmt"
	"sync"
)

// Event is one event of a tenant, enqueued one at a time.
type Event struct {
	Tenant string
	Kind   string
	N      int
}

// Index is where indexEvents writes: the events of each tenant, and the
// bulk calls it made (the tenant and the size of each).
var Index = &index{events: map[string][]Event{}}

type index struct {
	mu     sync.Mutex
	events map[string][]Event
	calls  []string
}

// Calls returns the bulk calls made so far, as "tenant×size".
func (ix *index) Calls() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return append([]string(nil), ix.calls...)
}

// indexEvents writes a batch of one tenant's events with one bulk call;
// an event of kind "bad" is refused alone, and retried alone.
//
//bananas:task route=events batch=100 linger=200ms key=Tenant retries=1
func indexEvents(ctx context.Context, events []Event) []error {
	errs := make([]error, len(events))
	Index.mu.Lock()
	defer Index.mu.Unlock()
	Index.calls = append(Index.calls, fmt.Sprintf("%s×%d", events[0].Tenant, len(events)))
	for i, e := range events {
		if e.Kind == "bad" {
			errs[i] = fmt.Errorf("event %d of %s: kind %q refused", e.N, e.Tenant, e.Kind)
			continue
		}
		Index.events[e.Tenant] = append(Index.events[e.Tenant], e)
	}
	return errs
}

// Squared is the result of square: one per job.
type Squared struct {
	N, Square int
}

// square squares many numbers in one call; each caller gets its own.
//
//bananas:task route=scores batch=50 linger=20ms
func square(ctx context.Context, ns []int) ([]Squared, []error) {
	out := make([]Squared, len(ns))
	for i, n := range ns {
		out[i] = Squared{N: n, Square: n * n}
	}
	return out, nil
}
