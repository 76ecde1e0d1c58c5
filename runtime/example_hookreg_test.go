package runtime_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
)

// auditHook follows a job on both sides: its enqueue (HookEnqueue), its
// runs (HookWorkBegin) and their ends (HookWorkEnd).
type auditHook struct{ ended chan string }

func (auditHook) Enqueue(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
	e.SetHeader("audit", "on")
	return next(ctx)
}

func (auditHook) WorkBegin(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
	fmt.Println("run", job.Name, "attempt", job.Attempt, "audit", job.Header("audit"))
	return next(ctx)
}

func (h auditHook) JobEnded(e bananastype.JobEnd) { h.ended <- e.Task + " " + e.Ending.String() }

// One value added with AddHook subscribes to every operation it
// implements, for the client's enqueues and its workers' runs and ends.
func ExampleClient_AddHook() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	h := auditHook{ended: make(chan string, 1)}
	c.AddHook(h)

	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	runtime.Handle(w, tasks.CountWords, func(ctx context.Context, t tasks.Text) (int, error) { return len(t.Body), nil })
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	n, err := tasks.CountWords.With(c).Call(ctx, tasks.Text{Body: "hello"})
	fmt.Println(n, err)
	fmt.Println("ended:", <-h.ended)
	// Output:
	// run count_words attempt 1 audit on
	// 5 <nil>
	// ended: count_words completed
}
