package runtime

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

func (w *Worker) track(r *run) {
	w.mu.Lock()
	w.running[r] = struct{}{}
	w.mu.Unlock()
}

// untrack stops renewing r's lease; when nothing runs any more, idle is closed.
func (w *Worker) untrack(r *run) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.running[r]; !ok {
		return
	}
	delete(w.running, r)
	if len(w.running) == 0 {
		close(w.idle)
		w.idle = make(chan struct{})
	}
}

// snapshot returns the running jobs grouped by route, and the idle channel to
// wait on for them to end.
func (w *Worker) snapshot() (map[string][]*run, chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	byRoute := map[string][]*run{}
	for r := range w.running {
		byRoute[r.d.Route] = append(byRoute[r.d.Route], r)
	}
	return byRoute, w.idle
}

// renewLoop extends the leases of running jobs every Lease/3, and cancels the
// runs whose lease was lost (reaped after a stall, handed back).
func (w *Worker) renewLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		byRoute, _ := w.snapshot()
		for route, runs := range byRoute {
			ds := make([]*queue.Dispatch, len(runs))
			for i, r := range runs {
				ds[i] = r.d
			}
			lost, err := w.c.q.Renew(ctx, route, ds, w.c.q.Now().Add(w.opts.Lease))
			if err != nil {
				w.opts.Logger.Warn("bananas: renew leases", "route", route, "err", err)
				continue
			}
			w.cancelRequested(ctx, route, runs)
			for _, d := range lost {
				for _, r := range runs {
					if r.d == d && !r.settling.Load() {
						w.opts.Logger.Warn("bananas: lease lost; canceling the run", "job", d.ID)
						r.cancel(errLeaseLost)
						w.untrack(r)
					}
				}
			}
		}
	}
}

// cancelRequested cancels the runs of route whose cancellation was asked for
// while this worker missed the message (a reconnect of its subscription).
func (w *Worker) cancelRequested(ctx context.Context, route string, runs []*run) {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.d.ID
	}
	asked, err := w.c.q.CancelRequests(ctx, route, ids)
	if err != nil {
		w.opts.Logger.Warn("bananas: read cancel requests", "route", route, "err", err)
		return
	}
	for _, id := range asked {
		w.cancelJob(id)
	}
}

// reapInterval is how often a worker looks for expired leases on its routes.
func (w *Worker) reapInterval() time.Duration {
	return min(max(w.opts.Lease/4, 50*time.Millisecond), 5*time.Second)
}

// reapLoop recovers jobs of the worker's routes whose lease expired: their
// worker died or lost Redis. Each counts a failed attempt.
func (w *Worker) reapLoop(ctx context.Context) {
	t := time.NewTicker(w.reapInterval())
	defer t.Stop()
	for {
		for _, route := range w.opts.Routes {
			w.reap(ctx, route)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *Worker) reap(ctx context.Context, route string) {
	now := w.c.q.Now() // leases are judged on Redis's clock
	const msg = "lease expired: the worker running it stopped renewing (crashed or lost Redis)"
	out, err := w.c.q.Reap(ctx, route, now, func(e queue.Expired) queue.Verdict {
		attempts := e.Attempts + 1
		rec := recordOf(e.ID, e.Name, "", time.Time{}, e.MaxRetries, e.Envelope)
		rec.Error, rec.Attempts, rec.FinishedAt = msg, attempts, now.UnixMilli()
		encoded, _ := results.Encode(rec)
		return queue.Verdict{
			RetryAt: now.Add(w.retryDelay(e.Envelope, attempts)), Record: encoded,
			TTL: ttlOr(e.Envelope.FailureTTL, w.opts.FailureTTL),
		}
	})
	if err != nil {
		if ctx.Err() == nil {
			w.opts.Logger.Warn("bananas: recover expired leases", "route", route, "err", err)
		}
		return
	}
	for id, o := range out {
		switch o {
		case queue.Retrying:
			w.opts.Logger.Warn("bananas: recovered a job whose lease expired; retry scheduled", "job", id, "route", route)
		case queue.DeadEnded:
			w.opts.Logger.Warn("bananas: recovered a job whose lease expired; out of retries, dead-lettered", "job", id, "route", route)
		}
	}
}

// retentionLoop deletes dead-lettered jobs older than queue.DeadRetention, at
// start and hourly.
func (w *Worker) retentionLoop(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		for _, route := range w.opts.Routes {
			if n, err := w.c.q.Purge(ctx, route, w.c.q.Now().Add(-queue.DeadRetention)); err != nil && ctx.Err() == nil {
				w.opts.Logger.Warn("bananas: dead-letter retention", "route", route, "err", err)
			} else if n > 0 {
				w.opts.Logger.Info("bananas: deleted expired dead-lettered jobs", "route", route, "count", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// shutdown waits up to ShutdownTimeout for running jobs, then hands the rest
// back to the front of their queues without counting an attempt. A run whose
// outcome is already being written (its ack or failure in flight) is not
// handed back: it is waited for, as the write is bounded by its own timeout.
// Handing it back could land before its ack, and a job that succeeded would
// run again.
func (w *Worker) shutdown() {
	defer w.handBacks.drain(w.opts.Logger)
	byRoute, idle := w.snapshot()
	if len(byRoute) == 0 {
		return
	}
	t := time.NewTimer(w.opts.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-idle:
		return
	case <-t.C:
	}
	byRoute, idle = w.snapshot()
	if len(byRoute) == 0 {
		return // the last runs ended as the grace period did
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	for _, runs := range byRoute {
		for _, r := range runs {
			if !r.settling.CompareAndSwap(false, true) {
				continue // its outcome is on its way
			}
			r.cancel(errHandedBck)
			ok, err := w.c.q.Requeue(ctx, r.d)
			w.untrack(r)
			switch {
			case err != nil:
				w.opts.Logger.Warn("bananas: hand back failed; the job will be recovered when its lease expires", "job", r.d.ID, "err", err)
			case ok:
				w.opts.Logger.Info("bananas: job handed back at shutdown", "job", r.d.ID, "task", r.d.Name)
			}
		}
	}
	select {
	case <-idle:
	case <-ctx.Done():
		w.opts.Logger.Warn("bananas: outcomes of finished jobs still unwritten at shutdown; they run again when their lease expires")
	}
}
