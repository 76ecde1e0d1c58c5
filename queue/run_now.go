package queue

import (
	"context"
	"fmt"
)

// runNowScript is run_now.lua.
var runNowScript = newScript("run_now")

// RunNow runs scheduled job id (delayed, or waiting for its retry) now: its
// run-at becomes now and its route's due jobs are promoted, so that it
// waits in its ready list (or its flow) for the next free worker, its
// attempts and retries left as they were. A pending job is left as it is:
// it already waits to run, as after a first call whose answer was lost. A
// job in another state is an error wrapping ErrWrongState that names the
// state, and an unknown id ErrNotFound.
func (js Jobs) RunNow(ctx context.Context, id string) error {
	route, err := js.q.RouteOfJob(ctx, id)
	if err != nil {
		return fmt.Errorf("run job %s now: %w", id, err)
	}
	k := js.q.Keys(route)
	now := js.q.Now()
	// Retry-safe: a second run finds the job due, or promoted and pending.
	due, err := runNowScript.Run(ctx, js.q.rdb, []string{k.Scheduled()}, id, ms(now)).Int()
	if err != nil {
		return fmt.Errorf("run job %s now: %w", id, err)
	}
	if due == 1 {
		if _, err := js.Promote(ctx, route, now); err != nil {
			return fmt.Errorf("run job %s now: %w", id, err)
		}
		return nil
	}
	s, err := js.Lookup(ctx, id)
	switch {
	case err != nil:
		return fmt.Errorf("run job %s now: %w", id, err)
	case s.Status == StatusPending:
		return nil
	}
	return fmt.Errorf("%w: job %s is %s, not scheduled", ErrWrongState, id, s.Status)
}
