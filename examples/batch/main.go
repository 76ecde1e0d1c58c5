// Command batch shows batch handlers on the embedded Redis (mem://): 1,000
// events of 10 tenants enqueued one job each and indexed with one bulk call
// per batch of one tenant (batch=100 linger=200ms key=Tenant), an event the
// index refuses retried alone, and numbers squared many at a time while
// each caller of Call gets its own result.
//
//	go run ./examples/batch
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/bananas-go/bananas/examples/batch/tasks"
	"github.com/bananas-go/bananas/runtime"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the example, printing what happens to out.
func run(ctx context.Context, out io.Writer) error {
	c, err := runtime.Connect(ctx, "mem://")
	if err != nil {
		return err
	}
	defer c.Close()
	runtime.SetDefault(c)

	// 1,000 events over 10 tenants, interleaved; one of them refused on
	// its first run.
	events := make([]tasks.Event, 1000)
	for i := range events {
		events[i] = tasks.Event{Tenant: fmt.Sprintf("tenant-%d", i%10), Kind: "click", N: i}
	}
	events[7].Kind = "bad"
	ids, err := tasks.IndexEvents.EnqueueMany(ctx, events)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "enqueued %d events, one job each\n", len(ids))

	// A batch holds one worker slot per job: Concurrency 100 lets a batch
	// of 100 fill.
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"events", "scores"}, Concurrency: 100,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	for i, id := range ids {
		_, err := tasks.IndexEvents.Await(ctx, id)
		var je *runtime.JobError
		switch {
		case i == 7 && errors.As(err, &je):
			fmt.Fprintf(out, "event 7 failed for good after %d attempts, alone: %s\n", je.Attempts, je.Message)
		case err != nil:
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	calls := tasks.Index.Calls()
	fmt.Fprintf(out, "indexed in %d bulk calls, each of one tenant: %v\n", len(calls), calls)

	// Callers of a batched task still call one job at a time, and each
	// gets its own result.
	var wg sync.WaitGroup
	squares := make([]tasks.Squared, 20)
	errs := make([]error, 20)
	for i := range squares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			squares[i], errs[i] = tasks.Square.Call(ctx, i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(out, "20 concurrent Calls of square, each its own result: 7² = %d, 19² = %d\n", squares[7].Square, squares[19].Square)
	return nil
}
