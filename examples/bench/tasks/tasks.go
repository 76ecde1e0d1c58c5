// Package tasks holds the benchmark's tasks. The handlers report to hooks the
// load generator installs, so one binary can measure every scenario.
package tasks

//go:generate go tool bananagen

import (
	"context"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// Payload is the ~90-byte body of the enqueue and drain scenarios (the peer
// harness sends the same JSON as bytes).
type Payload struct {
	To, Subject, Body string
}

// Stamp carries the time a job was enqueued, or was due.
type Stamp struct{ At int64 }

// Hooks are called by the handlers; set by the load generator before workers start.
var (
	OnNoop    = func() {}
	OnPing    = func(sent time.Time) {}
	OnDelayed = func(due time.Time) {}
)

//bananas:task retries=0
func noop(ctx context.Context, p Payload) error {
	OnNoop()
	return nil
}

// noopLean is noop keeping nothing once it completed (result_ttl=0): the
// lean drain, beside BullMQ's removeOnComplete.
//
//bananas:task retries=0 result_ttl=0
func noopLean(ctx context.Context, p Payload) error {
	OnNoop()
	return nil
}

//bananas:task retries=0
func ping(ctx context.Context, s Stamp) error {
	OnPing(time.Unix(0, s.At))
	return nil
}

//bananas:task retries=0
func echo(ctx context.Context, s Stamp) (Stamp, error) { return s, nil }

//bananas:task retries=0
func delayed(ctx context.Context, s Stamp) error {
	OnDelayed(time.Unix(0, s.At))
	return nil
}

// BounceText is the error text of every bounce job, which the admin benchmark
// searches the dead jobs for.
const BounceText = "smtp: 550 mailbox unavailable"

// bounce fails at once without a retry: the admin benchmark's dead jobs.
//
//bananas:task retries=0
func bounce(ctx context.Context, p Payload) error {
	return fmt.Errorf("%s: %s: %w", p.To, BounceText, runtime.SkipRetry)
}

// Keyed is the args of the flow-control scenarios: the user a job is for.
type Keyed struct {
	User string
	At   int64
}

// OnKeyed is called by the flow-control scenarios' handlers.
var OnKeyed = func(k Keyed) {}

// perUser runs one job per user at a time, across every worker.
//
//bananas:task retries=0 route=peruser key=User max_running=1
func perUser(ctx context.Context, k Keyed) error {
	OnKeyed(k)
	return nil
}

// fair serves its users round-robin, without limits.
//
//bananas:task retries=0 route=fair key=User
func fair(ctx context.Context, k Keyed) error {
	OnKeyed(k)
	return nil
}

// rated starts at most 1,000 jobs a second, across every worker.
//
//bananas:task retries=0 route=rated rate=1000/s
func rated(ctx context.Context, k Keyed) error {
	OnKeyed(k)
	return nil
}

// plain is perUser without a key: the flow scenarios' baseline.
//
//bananas:task retries=0 route=plain
func plain(ctx context.Context, k Keyed) error {
	OnKeyed(k)
	return nil
}

// OnLink is called by link at its start with the end of the step before it
// (zero for a chain's first step); OnLeaf by leaf.
var (
	OnLink = func(prevEnd time.Time) {}
	OnLeaf = func() {}
)

// link is a step of the workflow scenarios' chains: it reports when the
// step before it ended, and returns when it ends itself, which the next
// step is given.
//
//bananas:task retries=0
func link(ctx context.Context, s Stamp) (Stamp, error) {
	var prev time.Time
	if s.At != 0 {
		prev = time.Unix(0, s.At)
	}
	OnLink(prev)
	return Stamp{At: time.Now().UnixNano()}, nil
}

// leaf is a step of the workflow scenarios' fan-out.
//
//bananas:task retries=0
func leaf(ctx context.Context, s Stamp) (Stamp, error) {
	OnLeaf()
	return s, nil
}

// join is the fan-in after the leaves: how many it was given.
//
//bananas:task retries=0
func join(ctx context.Context, all []Stamp) (int, error) { return len(all), nil }
