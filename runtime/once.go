package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/ext"
)

// OnceMarkerTTL is how long Once remembers that a key's effect was done: a
// call with the key after that runs fn again.
const OnceMarkerTTL = 7 * 24 * time.Hour

// OnceClaimTTL is how long a caller's claim on a key holds without renewal;
// it is renewed every OnceClaimTTL/3 while fn runs. A caller that died
// (killed, or cut from Redis) holds the key up for at most this long.
const OnceClaimTTL = 30 * time.Second

// onceWriteTimeout bounds the marker's write and the claim's release, which
// go on after ctx ended: fn's outcome must reach Redis however fn ended.
const onceWriteTimeout = 10 * time.Second

// ErrOnceNoClient is what Once returns when ctx is not a handler's context,
// which carries its worker's client; outside a handler, call Client.Once.
var ErrOnceNoClient = errors.New("bananas: runtime.Once needs a handler's context, which carries its worker's client; outside a handler, call Client.Once")

// ErrOnceClaimLost is the cause (context.Cause) with which Once cancels fn's
// context when fn's claim on its key was taken by another caller: fn ran
// past the claim's expiry without it being renewed (Redis unreachable, the
// process paused), and the other caller may be running fn now.
var ErrOnceClaimLost = errors.New("bananas: Once lost its claim on the key to another caller")

// Once runs fn at most once per key, with the client of the worker whose
// handler received ctx: see Client.Once. With any other ctx it returns
// ErrOnceNoClient and does not call fn.
func Once(ctx context.Context, key string, fn func(context.Context) error) (ran bool, err error) {
	c := clientOf(ctx)
	if c == nil {
		return false, ErrOnceNoClient
	}
	return c.Once(ctx, key, fn)
}

// Once runs fn unless fn already succeeded for key (under c's namespace),
// and reports whether it ran it: a handler's side effect (an email sent, a
// charge made) then happens once across the job's retries, the recovery of
// its lease after its worker died, and duplicate jobs.
//
// When fn returns nil, a marker is stored for OnceMarkerTTL, and every later
// call with key returns false, nil without calling fn. While fn runs, its
// caller holds a claim on key, renewed every OnceClaimTTL/3; a second caller
// meanwhile waits (until ctx ends) for the first to finish: it returns false
// if the first succeeded, and runs fn itself if the first failed — fn
// returned an error or panicked, or its process died and its claim ran out.
//
// fn's error is returned as it is (ran true), so that a handler can return
// it to be retried. fn's context is ctx, canceled with cause
// ErrOnceClaimLost if another caller took the claim over.
//
// What Once cannot do: if fn succeeded and its process died (or lost Redis)
// before the marker was stored, the next call runs fn again; the error Once
// then returns says so. Make fn idempotent where that matters, or give the
// external service the key. docs/ONCE.md has the details.
func (c *Client) Once(ctx context.Context, key string, fn func(context.Context) error) (ran bool, err error) {
	if key == "" {
		return false, errors.New("bananas: Once needs a non-empty key")
	}
	if fn == nil {
		return false, fmt.Errorf("bananas: Once(%s) needs a function to run", shownOnceKey(key))
	}
	token := queue.OnceToken()
	claimed, err := c.onceClaim(ctx, key, token)
	if err != nil || !claimed {
		return false, err
	}
	return true, c.onceRun(ctx, key, token, fn)
}

// onceClaim claims key for token, waiting while another caller holds it.
// It returns true when token holds the claim, false when the effect is done.
//
// The wait listens on the key's channel, where the holder announces done
// and release; the subscription is made before the claim is asked for
// again, so no announcement falls between the two. Behind it, the claim is
// asked for again when the holder's claim would run out (a dead holder
// announces nothing), or every second when the channel cannot be listened
// to.
func (c *Client) onceClaim(ctx context.Context, key, token string) (bool, error) {
	var sub *results.Subscription
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	subscribed := false
	for {
		st, left, err := c.q.OnceClaim(ctx, key, token, c.onceTimings().claimTTL)
		if err != nil {
			return false, fmt.Errorf("bananas: Once(%s): %w", shownOnceKey(key), err)
		}
		if st != queue.OnceHeld {
			return st == queue.OnceClaimed, nil
		}
		if !subscribed {
			subscribed = true
			if sub, err = c.listener.Subscribe(ctx, c.q.OnceKeys(key).Channel); err == nil {
				continue
			}
			if ctx.Err() != nil {
				return false, onceWaitEnded(ctx, key)
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
		case <-c.listener.Reconnected():
		case <-ctx.Done():
			t.Stop()
			return false, onceWaitEnded(ctx, key)
		}
		t.Stop()
	}
}

func onceWaitEnded(ctx context.Context, key string) error {
	return fmt.Errorf("bananas: Once(%s): waiting for another caller running it: %w", shownOnceKey(key), context.Cause(ctx))
}

// onceRun runs fn under token's claim on key, renewed until fn's outcome is
// in Redis: the marker stored when fn succeeded, the claim released when it
// failed or panicked.
func (c *Client) onceRun(ctx context.Context, key, token string, fn func(context.Context) error) error {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopRenewing := c.renewOnceClaim(key, token, cancel)
	defer stopRenewing()
	// The writes of fn's outcome get their time when fn has returned,
	// however long it ran, and go on after ctx ended.
	write := func(f func(context.Context) error) error {
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), c.onceTimings().writeTimeout)
		defer wcancel()
		return f(wctx)
	}
	release := func(wctx context.Context) error { _, err := c.q.OnceRelease(wctx, key, token); return err }

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
		_, err := c.q.OnceDone(wctx, key, token, c.onceTimings().markerTTL)
		return err
	}); err != nil {
		return fmt.Errorf("bananas: Once(%s): fn succeeded but its marker could not be stored, so a later call runs fn again: %w", shownOnceKey(key), err)
	}
	return nil
}

// renewOnceClaim renews token's claim on key every third of its TTL until
// stop is called, whether or not ctx ended (the claim stands for fn running,
// not for its caller waiting). A renewal that finds the claim taken cancels
// fn's context with ErrOnceClaimLost; a renewal that fails (Redis
// unreachable) is tried again at the next tick.
func (c *Client) renewOnceClaim(key, token string, cancel context.CancelCauseFunc) (stop func()) {
	ttl := c.onceTimings().claimTTL
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
			held, err := c.q.OnceRenew(ctx, key, token, ttl)
			cancelRenew()
			if err == nil && !held {
				cancel(ErrOnceClaimLost)
				return
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// onceKey keeps the client's Once timings in its extensions.
type onceKey struct{}

// onceTimings are the durations c's Once calls use: the documented
// constants, which tests shorten (export_test.go).
type onceTimings struct {
	claimTTL, markerTTL, writeTimeout time.Duration
}

func (c *Client) onceTimings() *onceTimings {
	return ext.Get(&c.ext, onceKey{}, func() *onceTimings {
		return &onceTimings{claimTTL: OnceClaimTTL, markerTTL: OnceMarkerTTL, writeTimeout: onceWriteTimeout}
	})
}

// shownOnceKey quotes a key for an error, cut short: a key may be long.
func shownOnceKey(key string) string {
	if len(key) > 64 {
		return fmt.Sprintf("%q...", key[:64])
	}
	return fmt.Sprintf("%q", key)
}
