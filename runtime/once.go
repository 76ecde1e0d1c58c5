package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/bananas-go/bananas/runtime/internal/ext"
	"github.com/bananas-go/bananas/runtime/internal/once"
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
var ErrOnceClaimLost = once.ErrClaimLost

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
	return c.onceRunner().Run(ctx, key, fn)
}

// onceKey keeps the client's Once runner in its extensions.
type onceKey struct{}

// onceRunner is the runner of c's Once calls, made at its first use with
// the documented timings (tests shorten them: export_test.go).
func (c *Client) onceRunner() *once.Runner {
	return ext.Get(&c.ext, onceKey{}, func() *once.Runner {
		return &once.Runner{
			Queue: c.q, Listener: c.listener,
			ClaimTTL: OnceClaimTTL, MarkerTTL: OnceMarkerTTL, WriteTimeout: onceWriteTimeout,
		}
	})
}
