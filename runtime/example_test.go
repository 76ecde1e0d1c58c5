package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
)

// Example runs the quickstart's generated tasks on the embedded server.
func Example() {
	ctx := context.Background()
	c, err := runtime.Connect(ctx, "mem://")
	if err != nil {
		panic(err)
	}
	defer c.Close()
	runtime.SetDefault(c)

	w := runtime.NewWorker(c, runtime.WorkerOptions{
		Routes: []string{"images", "email", "default"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	tasks.Register(w) // generated: every handler of the package
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()

	res, err := tasks.ResizeImage.Call(ctx, tasks.ResizeArgs{URL: "https://x.test/cat.png", Width: 100})
	fmt.Println(res.URL, res.Bytes, err)

	n, err := tasks.CountWords.Call(ctx, tasks.Text{Body: "one two three"})
	fmt.Println(n, err)

	stop()
	<-done
	// Output:
	// https://x.test/cat-100w.png 9700 <nil>
	// 3 <nil>
}

// A job that fails for good comes back from Await as a *JobError.
func ExampleTask_Await_jobError() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	w := runtime.NewWorker(c, runtime.WorkerOptions{
		Routes:  []string{"email"},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Backoff: func(int) time.Duration { return time.Millisecond },
	})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go w.Run(wctx)

	// send_email is annotated retries=2: three runs, then the dead-letter queue.
	id, _ := tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "nobody"})
	_, err := tasks.SendEmail.With(c).Await(ctx, id)
	var je *runtime.JobError
	if errors.As(err, &je) {
		fmt.Println(je.Attempts, je.Message)
	}
	// Output: 3 invalid recipient "nobody": no @
}

// EnqueueJSON decodes args with the generated strict decoder: an unknown
// field is an error naming it.
func ExampleTask_EnqueueJSON() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	_, err := tasks.ResizeImage.With(c).EnqueueJSON(ctx, []byte(`{"URL": "https://x.test/a.png", "Height": 3}`))
	fmt.Println(err)
	// Output: bananas: args of resize_image: unknown field "Height"
}
