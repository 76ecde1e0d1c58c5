package results

import (
	"context"
	"time"
)

// Lookup reads the stored record of id: (nil, nil) while there is none yet,
// and an error (which Wait returns as is) when waiting is pointless, e.g. the
// job does not exist.
type Lookup func(ctx context.Context, id string) ([]byte, error)

// Waiter waits for job results over a Listener.
type Waiter struct {
	l       *Listener
	channel func(id string) string
	safety  time.Duration
}

// NewWaiter returns a waiter that hears the record of job id announced on
// channel(id) (queue.ResultChannel names it). safety is how often a waiter
// re-reads the stored record in case an announcement was lost; 0 means 2s.
func NewWaiter(l *Listener, channel func(id string) string, safety time.Duration) *Waiter {
	if safety <= 0 {
		safety = 2 * time.Second
	}
	return &Waiter{l: l, channel: channel, safety: safety}
}

// Wait blocks until the record of id is announced or found stored, or ctx
// ends. It subscribes (confirmed) before it looks the record up, so a record
// stored before the subscription is found by the lookup and one stored after
// it is announced to the subscription: none is missed.
func (w *Waiter) Wait(ctx context.Context, id string, lookup Lookup) (Record, error) {
	sub, err := w.l.Subscribe(ctx, w.channel(id))
	if err != nil {
		return Record{}, err
	}
	defer sub.Close()
	tick := time.NewTicker(w.safety)
	defer tick.Stop()
	for {
		reconnected := w.l.Reconnected()
		b, err := lookup(ctx, id)
		if err != nil {
			// The job may have ended, announced, and left nothing (no
			// record kept) between the subscription and the lookup: its
			// announcement is then on its way to the subscription.
			if p, ok := w.announced(ctx, sub); ok {
				return Decode(p)
			}
			return Record{}, err
		}
		if b != nil {
			return Decode(b)
		}
		select {
		case p := <-sub.C:
			return Decode(p)
		case <-tick.C:
		case <-reconnected:
		case <-ctx.Done():
			return Record{}, ctx.Err()
		}
	}
}

// announced returns a payload the subscription got, once everything Redis
// sent the listener before now has been delivered (Listener.Flush).
func (w *Waiter) announced(ctx context.Context, sub *Subscription) ([]byte, bool) {
	fctx, cancel := context.WithTimeout(ctx, w.safety)
	defer cancel()
	_ = w.l.Flush(fctx) // without it, what has come is still looked at
	select {
	case p := <-sub.C:
		return p, true
	default:
		return nil, false
	}
}

// WaitMany waits for every id concurrently over the same listener and returns
// the records in the order of ids; the first error ends the wait.
func (w *Waiter) WaitMany(ctx context.Context, ids []string, lookup Lookup) ([]Record, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]Record, len(ids))
	errs := make(chan error, len(ids))
	for i, id := range ids {
		go func() {
			r, err := w.Wait(ctx, id, lookup)
			out[i] = r
			errs <- err
		}()
	}
	var first error
	for range ids {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return out, first
}
