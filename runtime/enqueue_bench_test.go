package runtime_test

import (
	"context"
	"testing"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// BenchmarkEnqueue measures Task.Enqueue from 16 goroutines, as the enqueue
// scenario of make bench does, on a redis-server of its own: the producer's
// own work (encode, id, envelope, payload) and the coalesced flushes. The
// allocations reported are per enqueue, flush share included.
func BenchmarkEnqueue(b *testing.B) {
	type payload struct{ To, Subject, Body string }
	task := runtime.NewTask[payload, runtime.None]("bench_enqueue", runtime.MaxRetries(0))
	srv := redistest.Start(b)
	ctx := context.Background()
	c, err := runtime.Connect(ctx, srv.URL(), runtime.WithNamespace("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	task = task.With(c)
	p := payload{"user@example.com", "hello", "0123456789012345678901234567890123456789"}
	b.SetParallelism(8) // 8 goroutines per P: 16 on a 2-core machine
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := task.Enqueue(ctx, p); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
