package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
)

// Once keeps a handler's side effect to one across the job's runs: here
// the first run sends the email and then fails on a later step, and its
// retry finds the email sent (ran is false) and does not send it again.
func ExampleOnce() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	var mu sync.Mutex
	var sent int
	var said []string
	w := runtime.NewWorker(c, runtime.WorkerOptions{
		Routes:  []string{"email"},
		Backoff: func(int) time.Duration { return time.Millisecond },
		Logger:  slog.New(slog.DiscardHandler),
	})
	runtime.Handle(w, tasks.SendEmail, func(ctx context.Context, a tasks.EmailArgs) (runtime.None, error) {
		ran, err := runtime.Once(ctx, "welcome-email:"+a.To, func(ctx context.Context) error {
			mu.Lock()
			sent++ // the mail provider's call
			mu.Unlock()
			return nil
		})
		if err != nil {
			return runtime.None{}, err
		}
		mu.Lock()
		defer mu.Unlock()
		said = append(said, fmt.Sprintf("run %d: sent now %v", len(said)+1, ran))
		if len(said) == 1 {
			return runtime.None{}, errors.New("crm: update timed out") // fails after the email went out
		}
		return runtime.None{}, nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	_, err := tasks.SendEmail.With(c).Call(ctx, tasks.EmailArgs{To: "ann@x.test", Subject: "Welcome"})
	mu.Lock()
	defer mu.Unlock()
	for _, s := range said {
		fmt.Println(s)
	}
	fmt.Println(err, "emails sent:", sent)
	// Output:
	// run 1: sent now true
	// run 2: sent now false
	// <nil> emails sent: 1
}

// Client.Once is Once outside a handler (a command, an HTTP handler): the
// first call with a key runs fn, a later one does not.
func ExampleClient_Once() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	migrate := func(ctx context.Context) error {
		fmt.Println("migrating")
		return nil
	}
	ran, err := c.Once(ctx, "migration-0042", migrate)
	fmt.Println(ran, err)
	ran, err = c.Once(ctx, "migration-0042", migrate)
	fmt.Println(ran, err)
	// Output:
	// migrating
	// true <nil>
	// false <nil>
}
