package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
)

type requestIDKey struct{}

// An EnqueueHook wraps every enqueue of the client: here it copies the
// request id of the producer's context into a header of the jobs, and
// notes what went where once next has stored them. The handler reads the
// header from its job.
func ExampleClient_AddEnqueueHook() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	c.AddEnqueueHook(func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
		if id, ok := ctx.Value(requestIDKey{}).(string); ok {
			e.SetHeader("request-id", id)
		}
		err := next(ctx)
		fmt.Println("enqueued", e.Count, e.Task, "to", e.Route, len(e.IDs), "ids,", err)
		return err
	})

	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	runtime.Handle(w, tasks.CountWords, func(ctx context.Context, t tasks.Text) (int, error) {
		job, _ := runtime.CurrentJob(ctx)
		fmt.Println("counting for request", job.Header("request-id"))
		return len(t.Body), nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	rctx := context.WithValue(ctx, requestIDKey{}, "req-7")
	n, err := tasks.CountWords.With(c).Call(rctx, tasks.Text{Body: "hello"})
	fmt.Println(n, err)
	// Output:
	// enqueued 1 count_words to default 1 ids, <nil>
	// counting for request req-7
	// 5 <nil>
}

// A hook refuses an enqueue by returning an error without calling next:
// nothing is stored, and the caller gets the hook's error.
func ExampleEnqueueHook_refuse() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	errFrozen := errors.New("email is frozen during the migration")
	c.AddEnqueueHook(func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
		if e.Route == "email" {
			return errFrozen
		}
		return next(ctx)
	})

	_, err := tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "ann@x.test"})
	fmt.Println(errors.Is(err, errFrozen))
	_, err = tasks.CountWords.With(c).Enqueue(ctx, tasks.Text{Body: "hello"})
	fmt.Println(err)
	routes, _ := runtime.NewInspector(c, tasks.Register).Routes(ctx)
	for _, r := range routes {
		fmt.Println(r.Route, r.High+r.Normal+r.Low, "pending")
	}
	// Output:
	// true
	// <nil>
	// default 1 pending
	// email 0 pending
	// images 0 pending
}

// Middleware wraps every handler call of a worker: here it logs each run
// with its attempt and outcome, a failed run and its retry included.
func ExampleMiddleware() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	logRuns := func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
		err := next(ctx)
		fmt.Printf("%s attempt %d: %v\n", job.Name, job.Attempt, err)
		return err // the handler's outcome, unchanged
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{
		Routes:     []string{"email", "default"},
		Backoff:    func(int) time.Duration { return time.Millisecond },
		Middleware: []runtime.Middleware{logRuns},
		Logger:     slog.New(slog.DiscardHandler),
	})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	tasks.CountWords.With(c).Call(ctx, tasks.Text{Body: "one two"})
	tasks.SendEmail.With(c).Call(ctx, tasks.EmailArgs{To: "nobody"}) // retries=2: three runs
	// Output:
	// count_words attempt 1: <nil>
	// send_email attempt 1: invalid recipient "nobody": no @
	// send_email attempt 2: invalid recipient "nobody": no @
	// send_email attempt 3: invalid recipient "nobody": no @
}
