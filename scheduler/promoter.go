package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// DefaultPromoterSafety is the longest the promoter sleeps when it knows of no
// due job (a schedule announcement lost in a reconnect costs at most this).
const DefaultPromoterSafety = time.Second

// Promoter moves scheduled jobs (delayed, or waiting for a retry) to their
// ready lists when they fall due, and at most once per ExpirySweep ends the
// jobs of its routes whose expiry passed before they started
// (queue.Jobs.ExpireDue). It does not poll on a fixed period: it sleeps
// until the earliest scheduled job of its routes, and wakes earlier when told
// of a job scheduled sooner (Wake).
type Promoter struct {
	Queue *queue.Queue
	// Routes returns the routes to promote on each pass.
	Routes func(context.Context) ([]string, error)
	// Wake delivers the run-at of newly scheduled jobs (optional); send on it
	// with OfferWake, which never blocks and never drops the earliest.
	Wake <-chan time.Time
	// Safety bounds a sleep when nothing is due. Default DefaultPromoterSafety.
	Safety time.Duration
	// OnError is told of failed passes (optional); the promoter keeps going.
	OnError func(error)
	// Outage, when set, is told of every pass, failed or not: it logs a
	// run of failed passes once when it starts and once when it ends.
	Outage *OutageLog

	// swept is when the expiry sweep last ran (Redis's clock).
	swept time.Time
}

// promoteParallel is how many routes a promoter's pass promotes at a time.
const promoteParallel = 8

// ExpirySweep is how often a promoter ends the jobs whose expiry passed
// where no fetch looks (a paused route, a delayed job due after its
// expiry). A fetch sets aside the expired jobs it meets itself, so the
// sweep needs no more than this; sweeping on every pass would cost an idle
// route a command per safety poll, and a route of many delayed jobs one per
// promotion.
const ExpirySweep = time.Second

// OfferWake hands at, the run-at of a newly scheduled job, to a Promoter
// through its Wake channel (buffered) without blocking. When a run-at is
// already waiting there, the earlier of the two stays: dropping the new one
// when the buffer is full would lose an announcement of a job due sooner than
// the one waiting, and that job would start up to the promoter's safety sleep
// late. Several senders are safe: a run-at a sender takes out of the buffer
// is folded into its own before it sends again.
func OfferWake(ch chan time.Time, at time.Time) {
	for {
		select {
		case ch <- at:
			return
		default:
		}
		select {
		case old := <-ch:
			if old.Before(at) {
				at = old
			}
		default:
		}
	}
}

// Run promotes until ctx ends.
func (p *Promoter) Run(ctx context.Context) {
	safety := p.Safety
	if safety <= 0 {
		safety = DefaultPromoterSafety
	}
	// Go >= 1.23 timers: Reset on a live timer needs no drain.
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// Run-at times are on Redis's clock (queue.Now), and so is wakeAt.
	wakeAt := p.Queue.Now()
	for {
		if !p.Queue.Now().Before(wakeAt) {
			wakeAt = p.pass(ctx, safety)
		}
		timer.Reset(wakeAt.Sub(p.Queue.Now()))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case at := <-p.Wake:
			if at.Before(wakeAt) {
				wakeAt = at
			}
		}
	}
}

// pass promotes every due job and returns when the next pass should run.
func (p *Promoter) pass(ctx context.Context, safety time.Duration) time.Time {
	now := p.Queue.Now()
	wakeAt := now.Add(safety)
	routes, err := p.Routes(ctx)
	if err != nil {
		p.report(ctx, err)
		return wakeAt
	}
	var failed atomic.Bool
	sweep := now.Sub(p.swept) >= ExpirySweep || now.Before(p.swept)
	if sweep {
		p.swept = now
	}
	// Routes are promoted side by side, promoteParallel at a time: the
	// jobs of many schedules falling due at one tick over several routes
	// wait on one route's round trips at a time otherwise.
	sem := make(chan struct{}, promoteParallel)
	var wg sync.WaitGroup
	for _, r := range routes {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			// Expired jobs end first: a delayed job past its expiry is not
			// promoted, and one waiting on a paused route ends all the same.
			// Between sweeps a delayed job past its expiry may be promoted: the
			// fetch that meets it sets it aside and ends it.
			if sweep {
				if _, err := p.Queue.Jobs.ExpireDue(ctx, r, now); err != nil {
					p.report(ctx, err)
					failed.Store(true)
				}
			}
			if _, err := p.Queue.Jobs.Promote(ctx, r, now); err != nil {
				p.report(ctx, err)
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	next, ok, err := p.Queue.Jobs.NextDue(ctx, routes)
	if err != nil {
		p.report(ctx, err)
		return wakeAt
	}
	if !failed.Load() && p.Outage != nil {
		p.Outage.OK("")
	}
	if ok && next.Before(wakeAt) {
		return next
	}
	return wakeAt
}

func (p *Promoter) report(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	if p.Outage != nil {
		p.Outage.Failed("", err)
	}
	if p.OnError != nil {
		p.OnError(err)
	}
}
