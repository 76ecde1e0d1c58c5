package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// Results are kept 1h after a success and 24h after a failure by default, and
// for ResultTTL when the enqueue says so.
func TestResults_KeptForTheirTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ok := testtasks.Echo.With(c)
		bad := testtasks.Note.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, ok, func(ctx context.Context, m Msg) (Reply, error) { return Reply{}, nil })
		runtime.Handle(w, bad, func(ctx context.Context, m Msg) (runtime.None, error) { return runtime.None{}, errors.New("no") })
		startWorker(t, w)
		ctx := ctxT(t)
		k := runtime.QueueOf(c).Keys("default")
		ttl := func(key string) time.Duration {
			d, err := c.Redis().PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		near := func(got, want time.Duration) bool { return got <= want && got > want-time.Minute }

		id, _ := ok.Enqueue(ctx, Msg{})
		if _, err := ok.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
		// A finished job is its result record, which lives as long as it should.
		if got := ttl(k.Result(id)); !near(got, time.Hour) {
			t.Fatalf("completed job (and result) TTL = %s, want about 1h", got)
		}

		id, _ = bad.Enqueue(ctx, Msg{}, runtime.MaxRetries(0))
		if _, err := bad.Await(ctx, id); err == nil {
			t.Fatal("want a failure")
		}
		if got := ttl(k.Result(id)); !near(got, 24*time.Hour) {
			t.Fatalf("failure result TTL = %s, want about 24h", got)
		}

		id, _ = ok.Enqueue(ctx, Msg{}, runtime.ResultTTL(10*time.Minute))
		if _, err := ok.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
		if got := ttl(k.Result(id)); !near(got, 10*time.Minute) {
			t.Fatalf("ResultTTL(10m) result TTL = %s", got)
		}
	})
}

func TestPriorities_WorkerTakesOnlyItsPriorities(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		ctx := ctxT(t)
		low, _ := task.Enqueue(ctx, Msg{}, runtime.WithPriority(runtime.PriorityLow))
		high, _ := task.Enqueue(ctx, Msg{}, runtime.WithPriority(runtime.PriorityHigh))
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Priorities: []runtime.Priority{runtime.PriorityHigh}}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) { return runtime.None{}, nil })
		startWorker(t, w)
		if _, err := task.Await(ctx, high); err != nil {
			t.Fatal(err)
		}
		if s := jobStatus(t, c, low); s != runtime.StatusPending {
			t.Fatalf("low job is %s on a high-only worker, want pending", s)
		}
	})
}
