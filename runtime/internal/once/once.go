// Package once owns the machinery behind runtime.Once: a caller's claim on
// a key, renewed while its function runs; the marker stored when the
// function succeeded; the release when it failed or panicked; and the wait
// of a second caller, on the key's channel, for the first to finish. The
// Redis side (the claim, renew, done and release scripts and the key's
// channel) is queue's (queue/once.go).
//
// runtime keeps the API (runtime.Once, Client.Once, OnceClaimTTL,
// OnceMarkerTTL and their errors) and a Runner per client; this package
// must not know jobs, workers or handlers.
package once

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// ErrClaimLost is the cause (context.Cause) with which Run cancels fn's
// context when fn's claim on its key was taken by another caller: fn ran
// past the claim's expiry without it being renewed (Redis unreachable, the
// process paused), and the other caller may be running fn now.
var ErrClaimLost = errors.New("bananas: Once lost its claim on the key to another caller")

// Runner runs functions at most once per key, in Queue's namespace.
type Runner struct {
	Queue    *queue.Queue
	Listener *results.Listener // where a waiting caller hears the holder end

	ClaimTTL     time.Duration // how long a claim holds unrenewed; renewed every third of it
	MarkerTTL    time.Duration // how long a success is remembered
	WriteTimeout time.Duration // bounds the writes of fn's outcome, counted from fn's return
}

// Run runs fn unless fn already succeeded for key, and reports whether it
// ran it (runtime.Client.Once documents what that holds). fn's error is
// returned as it is.
func (r *Runner) Run(ctx context.Context, key string, fn func(context.Context) error) (ran bool, err error) {
	if key == "" {
		return false, errors.New("bananas: Once needs a non-empty key")
	}
	if fn == nil {
		return false, fmt.Errorf("bananas: Once(%s) needs a function to run", shownKey(key))
	}
	token := queue.OnceToken()
	claimed, err := r.claim(ctx, key, token)
	if err != nil || !claimed {
		return false, err
	}
	return true, r.run(ctx, key, token, fn)
}

// claim claims key for token, waiting while another caller holds it.
// It returns true when token holds the claim, false when the effect is done.
//
// The wait listens on the key's channel, where the holder announces done
// and release; the subscription is made before the claim is asked for
// again, so no announcement falls between the two. Behind it, the claim is
// asked for again when the holder's claim would run out (a dead holder
// announces nothing), or every second when the channel cannot be listened
// to.
func (r *Runner) claim(ctx context.Context, key, token string) (bool, error) {
	var sub *results.Subscription
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	subscribed := false
	for {
		st, left, err := r.Queue.OnceClaim(ctx, key, token, r.ClaimTTL)
		if err != nil {
			return false, fmt.Errorf("bananas: Once(%s): %w", shownKey(key), err)
		}
		if st != queue.OnceHeld {
			return st == queue.OnceClaimed, nil
		}
		if !subscribed {
			subscribed = true
			if sub, err = r.Listener.Subscribe(ctx, r.Queue.OnceKeys(key).Channel); err == nil {
				continue
			}
			if ctx.Err() != nil {
				return false, waitEnded(ctx, key)
			}
		}
		var heard <-chan []byte
		if sub != nil {
			heard = sub.C
		} else {
			left = min(left, time.Second)
		}
		t := time.NewTimer(max(left, time.Millisecond))
		select {
		case <-heard:
		case <-t.C:
		case <-r.Listener.Reconnected():
		case <-ctx.Done():
			t.Stop()
			return false, waitEnded(ctx, key)
		}
		t.Stop()
	}
}

func waitEnded(ctx context.Context, key string) error {
	return fmt.Errorf("bananas: Once(%s): waiting for another caller running it: %w", shownKey(key), context.Cause(ctx))
}

// run runs fn under token's claim on key, renewed until fn's outcome is
// in Redis: the marker stored when fn succeeded, the claim released when it
// failed or panicked.
func (r *Runner) run(ctx context.Context, key, token string, fn func(context.Context) error) error {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopRenewing := r.renew(key, token, cancel)
	defer stopRenewing()
	// The writes of fn's outcome get their time when fn has returned,
	// however long it ran, and go on after ctx ended.
	write := func(f func(context.Context) error) error {
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), r.WriteTimeout)
		defer wcancel()
		return f(wctx)
	}
	release := func(wctx context.Context) error { _, err := r.Queue.OnceRelease(wctx, key, token); return err }

	returned := false
	defer func() {
		if !returned { // fn panicked: let a waiting caller run it, and the panic go on
			_ = write(release)
		}
	}()
	err := fn(runCtx)
	returned = true
	if err != nil {
		_ = write(release)
		return err
	}
	if err := write(func(wctx context.Context) error {
		_, err := r.Queue.OnceDone(wctx, key, token, r.MarkerTTL)
		return err
	}); err != nil {
		return fmt.Errorf("bananas: Once(%s): fn succeeded but its marker could not be stored, so a later call runs fn again: %w", shownKey(key), err)
	}
	return nil
}

// renew renews token's claim on key every third of its TTL until
// stop is called, whether or not ctx ended (the claim stands for fn running,
// not for its caller waiting). A renewal that finds the claim taken cancels
// fn's context with ErrClaimLost; a renewal that fails (Redis
// unreachable) is tried again at the next tick.
func (r *Runner) renew(key, token string, cancel context.CancelCauseFunc) (stop func()) {
	ttl := r.ClaimTTL
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(max(ttl/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ctx, cancelRenew := context.WithTimeout(context.Background(), ttl/3+time.Second)
			held, err := r.Queue.OnceRenew(ctx, key, token, ttl)
			cancelRenew()
			if err == nil && !held {
				cancel(ErrClaimLost)
				return
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// shownKey quotes a key for an error, cut short: a key may be long.
func shownKey(key string) string {
	if len(key) > 64 {
		return fmt.Sprintf("%q...", key[:64])
	}
	return fmt.Sprintf("%q", key)
}
