package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// handBacks returns the jobs of fetches whose outcome is unknown
// (queue.LostFetch: the reply never came) to their lists, without counting
// an attempt. Such a fetch may have leased jobs that nobody here will run;
// left alone, they would wait out their lease and the reaper would count a
// failed attempt against each — with no retries left, a job would be
// dead-lettered without ever having run.
type handBacks struct {
	q   Queue
	cfg *Config // the ends of jobs asked to cancel meanwhile: their records, TTL and sinks
	log *slog.Logger

	mu      sync.Mutex
	pending []*queue.LostFetch
	kick    chan struct{}
	trying  sync.Mutex // one try at a time: drain must see what Run's try puts back
}

// add records a lost fetch; Run hands its jobs back as soon as Redis answers.
func (h *handBacks) add(l *queue.LostFetch) {
	h.mu.Lock()
	h.pending = append(h.pending, l)
	h.mu.Unlock()
	notify(h.kick)
}

// handBackGiveUp is how long after a lost fetch's lease deadline its hand-back
// is still tried: by then the reaper has recovered its jobs, and a hand-back
// finds none leased under the token.
const handBackGiveUp = 10 * time.Minute

// Run hands back the pending fetches' jobs until ctx ends, retrying with a
// growing delay while Redis does not answer.
func (h *handBacks) Run(ctx context.Context) {
	delay := 50 * time.Millisecond
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.kick:
		case <-t.C:
		}
		if h.try(ctx) {
			delay = 50 * time.Millisecond
			continue
		}
		t.Reset(delay)
		delay = min(2*delay, 2*time.Second)
	}
}

// try hands back every pending fetch once and reports whether none is left.
func (h *handBacks) try(ctx context.Context) bool {
	h.trying.Lock()
	defer h.trying.Unlock()
	h.mu.Lock()
	todo := h.pending
	h.pending = nil
	h.mu.Unlock()
	var left []*queue.LostFetch
	for _, l := range todo {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		now := h.q.Now()
		out, err := h.q.HandBack(cctx, l, now, func(e queue.Expired) queue.Verdict {
			encoded, _ := results.Encode(expiredRecord(e, canceledBeforeRun, true, now))
			return queue.Verdict{Record: encoded, TTL: ttlOr(e.Envelope.FailureTTL, h.cfg.FailureTTL)}
		})
		cancel()
		// A job a try whose reply was lost ended canceled is reported by the
		// retry that succeeds (HandBack offers its record again), told then.
		for _, c := range out.Canceled {
			h.cfg.tell(h.cfg.canceledBeforeRunEnd(c.Expired, l.Route, c.Record, now))
		}
		n := out.Back
		switch {
		case err != nil && now.After(l.Until.Add(handBackGiveUp)):
			h.log.Warn("bananas: gave up handing back the jobs of a fetch whose reply was lost; the reaper recovers them", "route", l.Route, "err", err)
		case err != nil:
			left = append(left, l)
		case n > 0:
			h.log.Warn("bananas: handed back jobs of a fetch whose reply was lost; they run next, no attempt counted", "route", l.Route, "jobs", n, "fetch_err", l.Err)
		}
	}
	if len(left) == 0 {
		return true
	}
	h.mu.Lock()
	h.pending = append(left, h.pending...)
	h.mu.Unlock()
	return false
}

// drain tries the pending hand-backs once more, for a worker that is
// stopping.
func (h *handBacks) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if !h.try(ctx) {
		h.log.Warn("bananas: could not hand back the jobs of a lost fetch at shutdown; the reaper recovers them when their lease expires")
	}
}
