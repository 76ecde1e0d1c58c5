package scheduler

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// DefaultKeeperTTL is how long a keeper lock lasts without renewal: a
// keeper that dies hands its routes over within about this long (one that
// stops, at once), and a standby calls about once per TTL.
const DefaultKeeperTTL = 30 * time.Second

// Keeper takes, for each of its routes it can, the route's keeper lock
// (queue.Keep): one process per route does the route's time-driven work —
// promoting due jobs, reaping expired leases, purging old dead-lettered
// jobs — instead of every process that serves it, so a thousand idle
// workers of a route cost Redis what one does. There is no single point of
// failure: every process stands by for the routes it serves, and takes a
// route over once its keeper's lock runs out (a keeper that stops gives its
// locks up at once).
//
// A holder renews each lock every TTL/3. One that stands by tries again
// when the holder's lock would run out (keep.lua tells it when), plus a
// jitter so that the standbys do not all try at once: a standby costs
// Redis one small call per TTL and route. A keeper that stops publishes
// its release on the route's keeper channel, and a standby told of it
// (Kick) tries at once.
type Keeper struct {
	Queue *queue.Queue
	// Routes returns the routes to keep; it is read at each round, so a
	// route added (a new shard) is called for at the next one.
	Routes func() []string
	// TTL is the locks' time to live; DefaultKeeperTTL when zero.
	TTL time.Duration
	// OnChange is told the routes held each time they change (optional),
	// from the keeper's goroutine.
	OnChange func(held []string)
	// Outage, when set, is told of every round of calls, failed or not.
	Outage *OutageLog

	token string
	kick  chan struct{}
	ready chan struct{} // closed after the first round
	mu    sync.Mutex
	held  []string
}

// Ready is closed once Run made its first round of calls: from then on,
// Held says which routes the keeper took at start.
func (k *Keeper) Ready() <-chan struct{} { return k.readiness() }

func (k *Keeper) readiness() chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ready == nil {
		k.ready = make(chan struct{})
	}
	return k.ready
}

// Kick makes the keeper try at once for the routes it stands by for: their
// keeper gave its lock up. Safe to call before and during Run.
func (k *Keeper) Kick() {
	select {
	case k.kicks() <- struct{}{}:
	default:
	}
}

func (k *Keeper) kicks() chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kick == nil {
		k.kick = make(chan struct{}, 1)
	}
	return k.kick
}

// Held returns the routes whose keeper lock this keeper holds now, in the
// order Routes gives them.
func (k *Keeper) Held() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.held)
}

// Holds reports whether the keeper holds route's lock now.
func (k *Keeper) Holds(route string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Contains(k.held, route)
}

// Run takes and keeps locks until ctx ends, then gives up those it holds.
func (k *Keeper) Run(ctx context.Context) {
	ttl := k.TTL
	if ttl <= 0 {
		ttl = DefaultKeeperTTL
	}
	var b [16]byte
	_, _ = crand.Read(b[:])
	k.token = hex.EncodeToString(b[:])
	kick, ready, first := k.kicks(), k.readiness(), true
	next := map[string]time.Time{}  // when to call for each route; absent: now
	until := map[string]time.Time{} // when a lock held runs out, as last granted
	timer := time.NewTimer(0)
	defer timer.Stop()
	defer k.release()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-kick:
			// Spread over up to 100 ms, so that the standbys of a released
			// route do not all call in the same instant.
			for r := range next {
				if !k.Holds(r) {
					next[r] = time.Now().Add(rand.N(min(ttl/10, 100*time.Millisecond) + 1))
				}
			}
		}
		soonest := k.round(ctx, ttl, next, until)
		if first {
			first = false
			close(ready)
		}
		timer.Reset(time.Until(soonest))
	}
}

// round calls for every route whose time came (a route new to the keeper
// at once), records which it holds, and returns when the next call is due
// (a TTL away when it has no route). A lock is held until the end last
// granted (counted from before the call that granted it), so a keeper that
// cannot reach Redis keeps its routes — their loops then meet the outage
// too — until its lock would run out.
func (k *Keeper) round(ctx context.Context, ttl time.Duration, next, until map[string]time.Time) time.Time {
	now := time.Now()
	routes := k.Routes()
	held := make([]string, 0, len(routes))
	soonest := now.Add(ttl)
	for _, r := range routes {
		if at, ok := next[r]; !ok || !now.Before(at) {
			next[r] = k.call(ctx, r, ttl, now, until)
		}
		if now.Before(until[r]) {
			held = append(held, r)
		}
		if next[r].Before(soonest) {
			soonest = next[r]
		}
	}
	for r := range next { // routes no longer the keeper's: their locks lapse
		if !slices.Contains(routes, r) {
			delete(next, r)
			delete(until, r)
		}
	}
	k.mu.Lock()
	changed := !slices.Equal(held, k.held)
	k.held = held
	k.mu.Unlock()
	if changed && k.OnChange != nil {
		k.OnChange(slices.Clone(held))
	}
	return soonest
}

// call takes or renews route's lock, notes until when it holds it, and
// returns when to call again.
func (k *Keeper) call(ctx context.Context, r string, ttl time.Duration, now time.Time, until map[string]time.Time) time.Time {
	mine, left, err := k.Queue.Keep(ctx, r, k.token, ttl)
	switch {
	case err != nil:
		if ctx.Err() == nil && k.Outage != nil {
			k.Outage.Failed(r, err)
		}
		return now.Add(ttl / 3)
	case mine:
		until[r] = now.Add(ttl)
	default:
		delete(until, r)
	}
	if k.Outage != nil {
		k.Outage.OK(r)
	}
	// On the process's beat (queue.UntilBeat) when the wait is long enough:
	// a standby's try and a holder's renewal then share Redis's wake-up
	// with the process's other periodic calls. A shorter wait gets a jitter
	// instead, so that the standbys of a route do not call in one instant.
	wait := ttl / 3
	if !mine {
		wait = left
		if left < queue.Beat {
			wait += rand.N(ttl/10 + 1)
		}
	}
	return now.Add(queue.UntilBeat(wait))
}

// release gives up every lock held, so the standbys take over at their
// next try instead of waiting for the locks to run out.
func (k *Keeper) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range k.Held() {
		_ = k.Queue.Unkeep(ctx, r, k.token)
	}
	k.mu.Lock()
	k.held = nil
	k.mu.Unlock()
}
