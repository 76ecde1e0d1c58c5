package runtime

import (
	"context"
	"math"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// fetchLoop takes jobs while ctx lasts. It never sleeps on an empty queue: it
// waits for a wake-up (a push to an empty list of one of its routes), a freed
// slot, or the safety poll (WorkerOptions.SafetyPoll).
//
// Up to maxFetches fetches are in flight at once, each holding the slots it
// asked for (reserved before it goes out, the unused ones given back when it
// returns): with fast handlers a worker would otherwise sit idle for a whole
// round trip after every batch, its slots free and its next jobs still in Redis.
func (w *Worker) fetchLoop(ctx context.Context) {
	const maxFetches = 2
	safety := time.NewTimer(w.opts.SafetyPoll)
	defer safety.Stop()
	errDelay := 50 * time.Millisecond
	// When the worker is saturated, a fetch for a single freed slot costs two
	// round trips for one job; waiting up to gather for a few more slots lets
	// one fetch take several. An idle worker never waits here.
	const gather = time.Millisecond
	minFetch := max(1, w.opts.Concurrency/4)
	freeSlots := func() int { return w.opts.Concurrency - int(w.held.Load()) }
	gatherTimer := time.NewTimer(time.Hour)
	defer gatherTimer.Stop()
	gathering := false

	type fetched struct {
		asked, got int
		seen       int // wakes taken before this fetch went out
		err        error
	}
	done := make(chan fetched, maxFetches)
	inflight := 0
	empty := false // a fetch found the lists drained and no wake-up came since: wait for one
	// wakes counts the wake-ups taken. A fetch that found nothing only proves
	// the lists empty if no wake-up was taken after it went out: with two
	// fetches in flight, the older one can come back empty after a wake-up
	// for a new job was taken, and believing it would lose that wake-up —
	// the list is no longer empty, so the next push publishes none, and the
	// worker would sleep until the safety poll.
	wakes := 0
	var retryAt time.Time
	// Fetches run on maxFetches fetchers that live as long as the loop:
	// a goroutine per fetch would pay its creation and its stack's growth
	// through go-redis on every round trip.
	type fetchReq struct{ free, seen int }
	reqs := make(chan fetchReq)
	for range maxFetches {
		go func() {
			for r := range reqs {
				got, err := w.fetchOnce(ctx, r.free)
				w.held.Add(int32(got - r.free)) // the slots it did not fill
				if got < r.free {
					notify(w.slotFreed)
				}
				done <- fetched{r.free, got, r.seen, err}
			}
		}()
	}
	defer func() { // a fetch in flight starts its jobs; let it finish so shutdown sees them
		for ; inflight > 0; inflight-- {
			<-done
		}
		close(reqs)
	}()
	settle := func(f fetched) {
		inflight--
		switch {
		case f.err != nil:
			if ctx.Err() == nil {
				w.opts.Logger.Warn("bananas: fetch failed; retrying", "worker", w.id, "err", f.err, "in", errDelay)
				retryAt = time.Now().Add(errDelay)
				errDelay = min(2*errDelay, 2*time.Second)
			}
		case f.got < f.asked:
			errDelay = 50 * time.Millisecond
			if f.seen == wakes {
				empty = true
			}
		default:
			errDelay = 50 * time.Millisecond
		}
	}
	for ctx.Err() == nil {
		select {
		case f := <-done:
			settle(f)
			continue
		default:
		}
		if wait := time.Until(retryAt); wait > 0 {
			if inflight == 0 {
				sleepCtx(ctx, wait)
			} else {
				settle(<-done)
			}
			continue
		}
		if empty {
			if inflight > 0 {
				select {
				case f := <-done:
					settle(f)
				case <-w.wake:
					wakes++
					empty = false
				case <-ctx.Done():
				}
				continue
			}
			safety.Reset(w.opts.SafetyPoll)
			select {
			case <-w.wake:
				wakes++
			case <-safety.C:
			case <-ctx.Done():
			}
			empty = false
			continue
		}
		// Say what a freed slot must make possible to be worth a wake-up
		// (see slotReleased) before counting them.
		switch {
		case inflight == maxFetches:
			w.wantFree.Store(math.MaxInt32) // only a fetch's return lets one more go out
		case gathering:
			w.wantFree.Store(int32(minFetch))
		default:
			w.wantFree.Store(1)
		}
		free := freeSlots() // only this loop takes slots, so free cannot shrink under us
		if free == 0 || inflight == maxFetches {
			select {
			case <-w.slotFreed:
			case f := <-done:
				settle(f)
			case <-ctx.Done():
			}
			continue
		}
		if free < minFetch {
			if !gathering {
				gathering = true
				gatherTimer.Reset(gather)
				continue // count again, now waiting for minFetch (wantFree, above)
			}
			select {
			case <-w.slotFreed:
				continue
			case f := <-done:
				settle(f)
				continue
			case <-gatherTimer.C:
			case <-ctx.Done():
				continue
			}
		}
		gatherTimer.Stop()
		gathering = false
		w.held.Add(int32(free))
		inflight++
		reqs <- fetchReq{free, wakes} // a fetcher is idle: fewer than maxFetches are in flight
	}
}

// fetchOnce takes up to free jobs, routes in order of preference, and starts them.
// The Redis calls run under their own timeout, not ctx: a fetch canceled after
// its script ran would leave jobs leased to nobody, to be reaped later with an
// attempt counted against them.
func (w *Worker) fetchOnce(ctx context.Context, free int) (int, error) {
	got := 0
	for _, route := range w.opts.Routes {
		if got == free || ctx.Err() != nil {
			break
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		now := w.c.q.Now() // leases are judged on Redis's clock
		var ds []*queue.Dispatch
		var err error
		if len(w.opts.JobTypes) > 0 {
			ds, err = w.c.q.FetchTypes(rctx, route, w.priorities(), w.opts.JobTypes, free-got, now.Add(w.opts.Lease), now)
		} else {
			ds, err = w.c.q.Fetch(rctx, route, w.priorities(), free-got, now.Add(w.opts.Lease), now)
		}
		cancel()
		w.startAll(ds) // their slots were reserved by fetchLoop
		got += len(ds)
		if l, ok := lostFetch(err); ok {
			w.handBacks.add(l)
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
