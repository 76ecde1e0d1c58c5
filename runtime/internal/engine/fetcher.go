package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// fetcher takes jobs while its context lasts. It never sleeps on an empty
// queue: it waits for a wake-up (a push to an empty list of one of its
// routes), a freed slot, or the safety poll (Config.SafetyPoll).
//
// Up to maxFetches fetches are in flight at once, each holding the slots it
// asked for (reserved before it goes out, the unused ones given back when it
// returns): with fast handlers a worker would otherwise sit idle for a whole
// round trip after every batch, its slots free and its next jobs still in
// Redis.
type fetcher struct {
	cfg       *Config
	slots     *slots
	exec      *executor
	handBacks *handBacks
	outages   *outages
	wake      chan struct{} // signaled when a route's ready list was pushed to
	// due is the earliest time (unix ms, Redis's clock; 0: none) a fetch
	// said a flow held back by a limit may start a job: nothing wakes the
	// worker then, so its wait ends by it (see queue.Waiter.Due).
	due atomic.Int64

	// State of Run, owned by its goroutine.
	done        chan fetched // fetches that returned
	inflight    int          // fetches out
	empty       bool         // a fetch found the lists drained and no wake-up came since: wait for one
	wakes       int          // wake-ups taken (see account)
	retryAt     time.Time
	gathering   bool // waiting up to gather for minFetch free slots
	minFetch    int  // the slots a fetch of a saturated worker waits to gather
	safety      *time.Timer
	gatherTimer *time.Timer
}

// fetched is what a fetch came back with.
type fetched struct {
	asked, got int
	seen       int // wake-ups taken before this fetch went out
	err        error
}

const (
	maxFetches = 2
	// gather: when the worker is saturated, a fetch for a single freed
	// slot costs two round trips for one job; waiting up to gather for a
	// few more slots lets one fetch take several. An idle worker never
	// waits here.
	gather      = time.Millisecond
	minErrDelay = 50 * time.Millisecond
	maxErrDelay = 2 * time.Second
)

// Run fetches until ctx ends, then waits for the fetches in flight (they
// start their jobs, which shutdown must see).
func (f *fetcher) Run(ctx context.Context) {
	f.done = make(chan fetched, maxFetches)
	f.minFetch = max(1, f.cfg.Concurrency/4)
	f.safety = time.NewTimer(f.cfg.SafetyPoll)
	defer f.safety.Stop()
	f.gatherTimer = time.NewTimer(time.Hour)
	defer f.gatherTimer.Stop()
	// Fetches run on maxFetches fetch goroutines that live as long as Run:
	// a goroutine per fetch would pay its creation and its stack's growth
	// through go-redis on every round trip.
	reqs := make(chan fetched)
	for range maxFetches {
		go f.fetchEach(ctx, reqs)
	}
	defer func() {
		for ; f.inflight > 0; f.inflight-- {
			<-f.done
		}
		close(reqs)
	}()
	for ctx.Err() == nil {
		if free := f.ready(ctx); free > 0 {
			f.slots.reserve(free)
			f.inflight++
			reqs <- fetched{asked: free, seen: f.wakes} // a fetch goroutine is idle: fewer than maxFetches are in flight
		}
	}
}

// ready waits for one thing the next fetch needs — a fetch's return, the
// end of an error's delay, work after an empty fetch, free slots — and
// returns how many slots the next fetch may take, or 0 to look again.
func (f *fetcher) ready(ctx context.Context) int {
	select {
	case r := <-f.done:
		f.account(ctx, r)
		return 0
	default:
	}
	if wait := time.Until(f.retryAt); wait > 0 {
		if f.inflight == 0 {
			sleepCtx(ctx, wait)
		} else {
			f.account(ctx, <-f.done)
		}
		return 0
	}
	if f.empty {
		f.waitForWork(ctx)
		return 0
	}
	// Say what a freed slot must make possible to be worth a wake-up
	// before counting them (see slots).
	switch {
	case f.inflight == maxFetches:
		f.slots.wantFree(noWakeUp)
	case f.gathering:
		f.slots.wantFree(int32(f.minFetch))
	default:
		f.slots.wantFree(1)
	}
	free := f.slots.free() // only Run reserves, so free cannot shrink under it
	if free == 0 || f.inflight == maxFetches {
		select {
		case <-f.slots.freed:
		case r := <-f.done:
			f.account(ctx, r)
		case <-ctx.Done():
		}
		return 0
	}
	if free < f.minFetch {
		if !f.gathering {
			f.gathering = true
			f.gatherTimer.Reset(gather)
			return 0 // count again, now waiting for minFetch (wantFree, above)
		}
		select {
		case <-f.slots.freed:
			return 0
		case r := <-f.done:
			f.account(ctx, r)
			return 0
		case <-f.gatherTimer.C:
		case <-ctx.Done():
			return 0
		}
	}
	f.gatherTimer.Stop()
	f.gathering = false
	return free
}

// waitForWork waits, after a fetch found the lists empty, for a wake-up,
// the return of a fetch still out, or the safety poll.
func (f *fetcher) waitForWork(ctx context.Context) {
	if f.inflight > 0 {
		select {
		case r := <-f.done:
			f.account(ctx, r)
		case <-f.wake:
			f.wakes++
			f.empty = false
		case <-ctx.Done():
		}
		return
	}
	wait := queue.UntilBeat(f.cfg.SafetyPoll) // with the process's other periodic calls
	if at := f.due.Swap(0); at != 0 {
		wait = min(wait, max(0, time.UnixMilli(at).Sub(f.cfg.Queue.Now())+time.Millisecond))
	}
	f.safety.Reset(wait)
	select {
	case <-f.wake:
		f.wakes++
	case <-f.safety.C:
	case <-ctx.Done():
	}
	f.empty = false
}

// account takes in a fetch's return. A fetch that found fewer jobs than it
// asked for only proves the lists empty if no wake-up was taken after it
// went out: with two fetches in flight, the older one can come back empty
// after a wake-up for a new job was taken, and believing it would lose that
// wake-up — the list is no longer empty, so the next push publishes none,
// and the worker would sleep until the safety poll.
func (f *fetcher) account(ctx context.Context, r fetched) {
	f.inflight--
	switch {
	case r.err != nil:
		// Every route failed or waits out an outage (each logged by
		// outages): fetch again when the first may be tried.
		if ctx.Err() == nil {
			f.retryAt = f.outages.next()
		}
	case r.got < r.asked && r.seen == f.wakes:
		f.empty = true
	}
}

// fetchEach runs the fetches asked on reqs, each with the slots reserved
// for it, giving back those it did not fill.
func (f *fetcher) fetchEach(ctx context.Context, reqs <-chan fetched) {
	for r := range reqs {
		r.got, r.err = f.fetch(ctx, r.asked)
		f.slots.unreserve(r.asked - r.got)
		f.done <- r
	}
}

// fetch takes up to free jobs, routes in order of preference, and starts
// them. A route whose fetch fails is left out until its retry time
// (outages); a route due for a retry is tried after the routes that are up,
// by one fetch at a time, so a node that is down costs the others nothing
// but the first failure. The error is returned only when every route tried
// failed, and the fetcher then waits as a whole.
func (f *fetcher) fetch(ctx context.Context, free int) (int, error) {
	got, tried, failed := 0, 0, 0
	var last error
	var due []string
	take := func(route string) {
		tried++
		n, err := f.fetchRoute(ctx, route, free-got)
		got += n
		if err != nil {
			failed++
			last = err
			if ctx.Err() == nil {
				f.outages.failed(route, err, time.Now())
			}
			return
		}
		f.outages.ok(route)
	}
	for _, route := range f.cfg.routes() {
		if got == free || ctx.Err() != nil {
			break
		}
		switch f.outages.state(route, time.Now()) {
		case routeUp:
			take(route)
		case routeDue:
			due = append(due, route)
		}
	}
	for _, route := range due {
		if got == free || ctx.Err() != nil {
			break
		}
		if f.outages.claim(route, time.Now()) {
			take(route)
		}
	}
	switch {
	case tried > 0 && failed == tried:
		return got, last
	case tried == 0 && got == 0 && ctx.Err() == nil:
		return 0, errAllOut
	}
	return got, nil
}

// fetchRoute takes up to n jobs of route and starts them. The Redis call
// runs under its own timeout, not ctx: a fetch canceled after its script
// ran would leave jobs leased to nobody, to be reaped later with an attempt
// counted against them.
func (f *fetcher) fetchRoute(ctx context.Context, route string, n int) (int, error) {
	batched := 0
	if len(f.cfg.Batches) > 0 {
		var err error
		if batched, err = f.fetchBatches(ctx, route, n); err != nil || batched >= n {
			return batched, err
		}
		n -= batched
	}
	q := f.cfg.Queue
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	now := q.Now() // leases are judged on Redis's clock
	var ds []*queue.Dispatch
	var err error
	if len(f.cfg.JobTypes) > 0 {
		ds, err = q.FetchTypes(rctx, route, f.cfg.Priorities, f.cfg.JobTypes, n, now.Add(f.cfg.Lease), now)
	} else {
		w := queue.Waiter{Channel: q.Keys(route).WakeChannelOf(f.cfg.ID), Until: now.Add(f.waitHold()), Due: f.noteDue}
		ds, err = q.FetchOrWait(rctx, route, f.cfg.Priorities, n, now.Add(f.cfg.Lease), now, w)
	}
	f.exec.startAll(ds) // their slots were reserved by Run
	var lost *queue.LostFetch
	if errors.As(err, &lost) {
		f.handBacks.add(lost)
	}
	return batched + len(ds), err
}

// noteDue keeps the earliest of the times fetches said a held flow may
// start a job.
func (f *fetcher) noteDue(at time.Time) {
	ms := at.UnixMilli()
	for {
		cur := f.due.Load()
		if (cur != 0 && cur <= ms) || f.due.CompareAndSwap(cur, ms) {
			return
		}
	}
}

// waitHold is how long a worker's entry in an idle set holds: past its
// safety poll, which registers it again, so that a live worker never
// lapses, and short enough that a dead one's entry goes within a few polls.
func (f *fetcher) waitHold() time.Duration { return 3 * f.cfg.SafetyPoll }

// errAllOut is a fetch's error when every route waits out an outage.
var errAllOut = errors.New("bananas: every route of the worker waits out an outage")

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
