package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts of runtime.Once: a claim on a side effect, its marker once it
// succeeded, and the claim given up when it failed. Its renewal is Relock.
var onceScripts = struct{ claim, done, release *redis.Script }{
	claim:   newScript("once_claim"),
	done:    newScript("once_done"),
	release: newScript("once_release"),
}

// OnceKeys are the names of one Once key's marker, claim and channel. The
// user's key, which may hold braces or any byte, is hashed (SHA-256, its
// first 128 bits in hex) into the hash tag the three share: its own, so
// that Once works on a Redis Cluster whatever the key, and a fixed length
// however long the key is.
type OnceKeys struct {
	Marker  string // <ns>:once:{<h>}:done   STRING when the effect was done (ms), kept OnceMarkerTTL
	Claim   string // <ns>:once:{<h>}:claim  STRING the running caller's token, with its TTL
	Channel string // <ns>:once:{<h>}        announces done and release to waiting callers
}

// OnceKeysOf returns the keys of Once key under namespace ns.
func OnceKeysOf(ns, key string) OnceKeys {
	sum := sha256.Sum256([]byte(key))
	base := ns + ":once:{" + hex.EncodeToString(sum[:16]) + "}"
	return OnceKeys{Marker: base + ":done", Claim: base + ":claim", Channel: base}
}

// OnceKeys returns the keys of Once key in this queue's namespace.
func (q *Queue) OnceKeys(key string) OnceKeys { return OnceKeysOf(q.ns, key) }

// OnceState is what a claim on a Once key found.
type OnceState int

const (
	OnceClaimed OnceState = 1 // the caller holds the claim: it runs the effect
	OnceDone    OnceState = 0 // the marker is set: the effect was done before
	OnceHeld    OnceState = 2 // another caller holds the claim
)

// OnceClaim claims Once key for token, for ttl (once_claim.lua). When another
// caller holds it, it returns OnceHeld and how long that claim has left.
func (q *Queue) OnceClaim(ctx context.Context, key, token string, ttl time.Duration) (OnceState, time.Duration, error) {
	k := q.OnceKeys(key)
	res, err := onceScripts.claim.Run(ctx, q.rdb, []string{k.Marker, k.Claim}, token, max(1, ttl.Milliseconds())).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 || res[0] < 0 || res[0] > 2 {
		return 0, 0, fmt.Errorf("once_claim.lua answered %v", res)
	}
	return OnceState(res[0]), time.Duration(res[1]) * time.Millisecond, nil
}

// OnceRenew extends token's claim on Once key to ttl from now, and reports
// whether token still held it (relock.lua).
func (q *Queue) OnceRenew(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return Relock(ctx, q.rdb, q.OnceKeys(key).Claim, token, max(time.Millisecond, ttl))
}

// OnceDone sets the marker of Once key for ttl, drops token's claim and
// announces it (once_done.lua). It reports whether the marker was set now
// (false: it was set already, and is kept as it was).
func (q *Queue) OnceDone(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	k := q.OnceKeys(key)
	n, err := onceScripts.done.Run(ctx, q.rdb, []string{k.Marker, k.Claim},
		token, max(1, ttl.Milliseconds()), q.Now().UnixMilli(), k.Channel).Int()
	return n == 1, err
}

// OnceRelease gives up token's claim on Once key and announces it, and
// reports whether token still held it (once_release.lua).
func (q *Queue) OnceRelease(ctx context.Context, key, token string) (bool, error) {
	k := q.OnceKeys(key)
	n, err := onceScripts.release.Run(ctx, q.rdb, []string{k.Claim}, token, k.Channel).Int()
	return n == 1, err
}

// OnceToken names one caller of Once: 128 random bits.
func OnceToken() string { return callToken() }
