package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/outbox"
	"github.com/bananas-go/bananas/runtime"
)

// The outbox's numbers (docs/OUTBOX.md), each against the shared
// PostgreSQL of the test binary and a redis-server of its own; make bench
// runs them:
//
//	go -C outbox test . -run '^$' -bench . -benchtime 1x
//
// Drain: 100,000 committed rows moved into Redis by relays (1,000 rows a
// batch), from the relays' start to an empty outbox, in jobs/s.
func BenchmarkRelay_Drain100k(b *testing.B) {
	for _, relays := range []int{1, 2} {
		b.Run(fmt.Sprintf("relays=%d", relays), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				pool, _ := database(b)
				c := connect(b, redistest.Start(b).URL())
				const n = 100_000
				ctx := context.Background()
				args := make([]mail, 10_000)
				for i := 0; i < n; i += len(args) {
					for j := range args {
						args[j] = mail{To: fmt.Sprintf("drain-%d", i+j), N: i + j}
					}
					err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
						_, err := sendMail.With(c).EnqueueManyTx(ctx, outbox.Tx(tx), args)
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				began := time.Now()
				rctx, stop := context.WithCancel(ctx)
				var wg sync.WaitGroup
				var rs []*outbox.Relay
				for range relays {
					r := outbox.NewRelay(pool, c, outbox.RelayOptions{Logger: quiet()})
					rs = append(rs, r)
					wg.Add(1)
					go func() { defer wg.Done(); _ = r.Run(rctx) }()
				}
				moved := func() int64 {
					m := int64(0)
					for _, r := range rs {
						m += r.Relayed()
					}
					return m
				}
				// The relays' own counts: polling count(*) would load the
				// database the relays drain.
				waitFor(b, 5*time.Minute, "every row moved", func() bool { return moved() >= n })
				took := time.Since(began)
				stop()
				wg.Wait()
				if left := pending(b, pool); left != 0 || moved() != n {
					b.Fatalf("the relays moved %d rows and left %d, want %d moved and none left", moved(), left, n)
				}
				b.ReportMetric(float64(n)/took.Seconds(), "jobs/s")
			}
		})
	}
}

// Start latency: from the commit of a transaction that enqueued one job to
// the start of its handler, while a worker waits and a relay runs: 500
// jobs one after the other, p50 and p99 in ms.
func BenchmarkEnqueueTx_CommitToStart(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		pool, _ := database(b)
		c := connect(b, redistest.Start(b).URL())
		started := make(chan time.Time, 1)
		startWorker(b, c, func(w *runtime.Worker) {
			runtime.Handle(w, sendMail, func(ctx context.Context, m mail) (runtime.None, error) {
				started <- time.Now()
				return runtime.None{}, nil
			})
		})
		startRelay(b, pool, c, outbox.RelayOptions{})
		ctx := context.Background()
		var lat []time.Duration
		b.StartTimer()
		for i := range 500 {
			tx, err := pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{N: i}); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			committed := time.Now()
			select {
			case at := <-started:
				lat = append(lat, at.Sub(committed))
			case <-time.After(30 * time.Second):
				b.Fatal("a committed job did not start")
			}
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max_ms")
	}
}
