package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

func TestBadInput_InvalidRouteIsRefusedByName(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		_, err := task.Enqueue(ctxT(t), Msg{}, runtime.Route("gpu pool!"))
		if err == nil || !strings.Contains(err.Error(), `invalid route "gpu pool!"`) {
			t.Fatalf("Enqueue with a bad route err = %v; want it to name the route", err)
		}
		for _, bad := range []runtime.Option{runtime.WithPriority("urgent"), runtime.MaxRetries(-1), runtime.Timeout(0), runtime.Unique(-time.Second), runtime.WithID("has space")} {
			if _, err := task.Enqueue(ctxT(t), Msg{}, bad); err == nil {
				t.Fatalf("Enqueue with a bad option succeeded")
			}
		}
		w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"ok", "not ok"}})
		if err := w.Run(ctxT(t)); err == nil || !strings.Contains(err.Error(), `invalid route "not ok"`) {
			t.Fatalf("Run with a bad route = %v; want it to name the route", err)
		}
		if depth, _ := runtime.QueueOf(c).Ops.Depths(ctxT(t), []string{"default"}); depth[0].Normal != 0 {
			t.Fatalf("a refused enqueue wrote %d jobs", depth[0].Normal)
		}
	})
}

func TestBadInput_OversizePayloadSaysSizeAndLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		_, err := task.Enqueue(ctxT(t), Msg{Text: strings.Repeat("x", 2<<20)})
		if err == nil || !strings.Contains(err.Error(), "args of t_note is 2.00 MiB") || !strings.Contains(err.Error(), "payload limit of 1 MiB") {
			t.Fatalf("oversize Enqueue err = %v; want the size and the limit", err)
		}

		// A result over the limit fails the job for good, saying so.
		huge := testtasks.Echo.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, huge, func(ctx context.Context, m Msg) (Reply, error) {
			return Reply{Text: strings.Repeat("y", 1<<20)}, nil
		})
		startWorker(t, w)
		_, err = huge.Call(ctxT(t), Msg{})
		var je *runtime.JobError
		if !errors.As(err, &je) || !strings.Contains(je.Message, "result of t_echo is 1.00 MiB") || je.Attempts != 1 {
			t.Fatalf("oversize result = %v; want a JobError naming size and limit, not retried", err)
		}
	})
}

// A job whose stored envelope is garbage is dead-lettered with a decode error,
// and the worker goes on with the next job: a delayed job (its own hash), a
// light job whose payload holds a corrupt envelope, and a light job whose
// payload is not one at all.
func TestBadInput_CorruptEnvelopeIsDeadLetteredWorkerContinues(t *testing.T) {
	cases := []struct {
		name, want string
		light      bool
		plant      func(ctx context.Context, c *runtime.Client, k queue.Keys, id string) error
	}{
		{"delayed job hash", "decode envelope", false, func(ctx context.Context, c *runtime.Client, k queue.Keys, id string) error {
			if err := c.Redis().HSet(ctx, k.Job(id), "e0", "\xc1 not msgpack").Err(); err != nil {
				return err
			}
			return c.Redis().ZAdd(ctx, k.Scheduled(), redisZ(id)).Err() // make it due now
		}},
		{"light payload envelope", "decode envelope", true, func(ctx context.Context, c *runtime.Client, k queue.Keys, id string) error {
			return c.Redis().HSet(ctx, k.Payloads(), id, "t_echo|normal|25|0|\xc1 not msgpack").Err()
		}},
		{"light payload unreadable", "unreadable payload", true, func(ctx context.Context, c *runtime.Client, k queue.Keys, id string) error {
			return c.Redis().HSet(ctx, k.Payloads(), id, "garbage").Err()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, c *runtime.Client) {
				task := testtasks.Echo.With(c)
				ctx := ctxT(t)
				var opts []runtime.Option
				if !tc.light {
					opts = append(opts, runtime.Delay(time.Hour))
				}
				bad, err := task.Enqueue(ctx, Msg{Text: "soon corrupt"}, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.plant(ctx, c, runtime.QueueOf(c).Keys("default"), bad); err != nil {
					t.Fatal(err)
				}
				good, _ := task.Enqueue(ctx, Msg{Text: "fine"})

				w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 1}))
				runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
				startWorker(t, w)

				_, err = task.Await(ctx, bad)
				var je *runtime.JobError
				if !errors.As(err, &je) || !strings.Contains(je.Message, tc.want) || je.Attempts != 1 {
					t.Fatalf("Await(corrupt) = %v; want a JobError with %q after one attempt", err, tc.want)
				}
				if s := jobStatus(t, c, bad); s != runtime.StatusFailed {
					t.Fatalf("corrupt job is %s, want failed (dead-lettered)", s)
				}
				if got, err := task.Await(ctx, good); err != nil || got.Text != "fine" {
					t.Fatalf("the next job after a corrupt one = %+v, %v", got, err)
				}
			})
		})
	}
}

func TestBadInput_NoHandlerIsAFailureNotADrop(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		orphan := testtasks.Note.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		startWorker(t, w)
		_, err := orphan.Call(ctxT(t), Msg{}, runtime.MaxRetries(0))
		var je *runtime.JobError
		if !errors.As(err, &je) || !strings.Contains(je.Message, `no handler for task "t_note"`) {
			t.Fatalf("Call without a handler = %v; want a JobError saying so", err)
		}
	})
}

func TestJobTypes_WorkerTakesOnlyItsTypes(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		mine := testtasks.Note.With(c)
		theirs := testtasks.OtherNote.With(c)
		ctx := ctxT(t)
		theirID, _ := theirs.Enqueue(ctx, Msg{})
		myID, _ := mine.Enqueue(ctx, Msg{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{JobTypes: []string{"t_note"}}))
		runtime.Handle(w, mine, func(ctx context.Context, m Msg) (runtime.None, error) { return runtime.None{}, nil })
		runtime.Handle(w, theirs, func(ctx context.Context, m Msg) (runtime.None, error) { return runtime.None{}, nil })
		startWorker(t, w)
		if _, err := mine.Await(ctx, myID); err != nil {
			t.Fatal(err)
		}
		if s := jobStatus(t, c, theirID); s != runtime.StatusPending {
			t.Fatalf("a job of another type is %s, want left pending", s)
		}
	})
}

func TestConnect_BadURLsAreNamed(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"localhost:6379", "http://x", "redis+cluster://", "redis+cluster://hostonly"} {
		if _, err := runtime.Connect(context.Background(), url); err == nil || !strings.Contains(err.Error(), "invalid Redis URL") {
			t.Fatalf("Connect(%q) err = %v; want an invalid-URL error", url, err)
		}
	}
	if _, err := runtime.Connect(context.Background(), "mem://", runtime.WithNamespace("bad{ns}")); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Fatalf("Connect with a bad namespace err = %v", err)
	}
}

func redisZ(member string) redis.Z { return redis.Z{Score: 0, Member: member} }
