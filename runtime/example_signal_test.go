package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// A signal declared once with its payload type: its Wait is a step that
// waits for it (holding no worker meanwhile), and its Send takes only that
// type, so a wrong payload is a compile error. The step after the wait
// runs with the payload.
func ExampleNewSignal() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	type Approval struct{ By string }
	approved := runtime.NewSignal[Approval]("approval").With(c)
	ship := runtime.NewTask[Approval, string]("example_ship").With(c)
	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	runtime.Handle(w, ship, func(_ context.Context, a Approval) (string, error) { return "shipped, approved by " + a.By, nil })
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	shipped := runtime.Then(approved.Wait(48*time.Hour), ship)
	id, err := shipped.Enqueue(ctx)
	if err != nil {
		panic(err)
	}
	if err := approved.Send(ctx, id, Approval{By: "ana"}); err != nil {
		panic(err)
	}
	fmt.Println(shipped.Await(ctx, id))
	// Output: shipped, approved by ana <nil>
}
