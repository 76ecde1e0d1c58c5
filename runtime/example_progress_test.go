package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
)

// A handler reports how far it has got with Progress; Client.Job (and
// `job ID`, the HTTP API, the dashboard) shows the last value while the
// job runs. Progress returns at once: the worker writes the value within
// ProgressEvery.
func ExampleProgress() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	release := make(chan struct{})
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"images"}, Logger: slog.New(slog.DiscardHandler)})
	runtime.Handle(w, tasks.ResizeImage, func(ctx context.Context, a tasks.ResizeArgs) (tasks.ResizeResult, error) {
		if err := runtime.Progress(ctx, 40, "resized 2 of 5 sizes"); err != nil {
			return tasks.ResizeResult{}, err
		}
		<-release // the rest of the work
		return tasks.ResizeResult{URL: a.URL, Bytes: 1}, nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	resize := tasks.ResizeImage.With(c)
	id, _ := resize.Enqueue(ctx, tasks.ResizeArgs{URL: "https://x.test/cat.png", Width: 100})
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := c.Job(ctx, id)
		if err == nil && info.Progress != nil {
			fmt.Println(info.Status, info.Progress.Percent, info.Progress.Note)
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("no progress shown:", err)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)

	resize.Await(ctx, id)
	info, _ := c.Job(ctx, id)
	fmt.Println(info.Status, info.Progress == nil) // an ended job shows none
	// Output:
	// processing 40 resized 2 of 5 sizes
	// completed true
}
