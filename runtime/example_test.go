package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/bananas-go/bananas/runtime"
)

type GreetArgs struct{ Name string }

// Declared by hand here; bananagen writes these for annotated functions.
var Greet = runtime.NewTask[GreetArgs, string]("greet", runtime.Route("greetings"))

func Example() {
	ctx := context.Background()
	c, err := runtime.Connect(ctx, "mem://")
	if err != nil {
		panic(err)
	}
	defer c.Close()
	runtime.SetDefault(c)

	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"greetings"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	runtime.Handle(w, Greet, func(ctx context.Context, a GreetArgs) (string, error) {
		return "hello, " + a.Name, nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()

	msg, err := Greet.Call(ctx, GreetArgs{Name: "ana"})
	fmt.Println(msg, err)

	stop()
	<-done
	// Output: hello, ana <nil>
}

func ExampleTask_Await_jobError() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	fragile := runtime.NewTask[GreetArgs, runtime.None]("fragile", runtime.MaxRetries(0)).With(c)

	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	runtime.Handle(w, fragile, func(ctx context.Context, a GreetArgs) (runtime.None, error) {
		return runtime.None{}, errors.New("no such user " + a.Name)
	})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go w.Run(wctx)

	id, _ := fragile.Enqueue(ctx, GreetArgs{Name: "bob"})
	_, err := fragile.Await(ctx, id)
	var je *runtime.JobError
	if errors.As(err, &je) {
		fmt.Println(je.Attempts, je.Message, strings.HasSuffix(je.ID, ".default"))
	}
	// Output: 1 no such user bob true
}
