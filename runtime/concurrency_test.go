package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A worker runs at most Concurrency handlers at once and uses all of them when
// jobs wait. It frees a slot when the handler returns and records outcomes
// beside the next jobs, with two fetches in flight, yet never holds more than
// 2×Concurrency leases (the slots plus the outcomes being written).
func TestWorker_ConcurrencyBoundsHandlersAndLeases(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		ctx := ctxT(t)
		const conc, n = 4, 120
		ids, err := task.EnqueueMany(ctx, make([]Msg, n))
		if err != nil {
			t.Fatal(err)
		}
		raise := func(v *atomic.Int64, to int64) {
			for old := v.Load(); to > old && !v.CompareAndSwap(old, to); old = v.Load() {
			}
		}
		var running, peak, leases atomic.Int64
		leasesKey := runtime.QueueOf(c).Keys("default").Leases()
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: conc}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			raise(&peak, running.Add(1))
			defer running.Add(-1)
			if held, err := c.Redis().HLen(ctx, leasesKey).Result(); err == nil {
				raise(&leases, held)
			}
			time.Sleep(time.Millisecond) // the work, so that handlers overlap
			return runtime.None{}, nil
		})
		startWorker(t, w)
		for _, id := range ids {
			if _, err := task.Await(ctx, id); err != nil {
				t.Fatalf("Await(%s) = %v", id, err)
			}
		}
		if p := peak.Load(); p != conc {
			t.Fatalf("at most %d handlers ran at once, want exactly Concurrency=%d", p, conc)
		}
		if l := leases.Load(); l > 2*conc || l < conc {
			t.Fatalf("the worker held up to %d leases; want between Concurrency=%d and 2×Concurrency", l, conc)
		}
	})
}
