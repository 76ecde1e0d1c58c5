package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
)

// A workflow is built from typed steps and enqueued in one call: here two
// count_words jobs run side by side (Task.Step), Gather collects their
// results in the order given, and Then feeds them to sum_counts, which the
// compiler checks takes the []int that Gather returns. Enqueue stores every
// step or none; Await returns the final step's result.
func ExampleGather() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	count := tasks.CountWords.With(c)
	total := runtime.Then(
		runtime.Gather(
			count.Step(tasks.Text{Body: "one two three"}),
			count.Step(tasks.Text{Body: "four five"}),
		),
		tasks.SumCounts.With(c),
	)
	id, err := total.Enqueue(ctx)
	if err != nil {
		panic(err)
	}
	n, err := total.Await(ctx, id)
	fmt.Println(n, err)
	// Output: 5 <nil>
}

// Then starts a step when the one before it completed, with that step's
// result as its args: a chain of tasks, here count_words and then a task
// of this program's own that doubles the count.
func ExampleThen() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	double := runtime.NewTask[int, int]("double_count").With(c)
	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	runtime.Handle(w, double, func(ctx context.Context, n int) (int, error) { return 2 * n, nil })
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	last := runtime.Then(tasks.CountWords.With(c).Step(tasks.Text{Body: "one two three"}), double)
	id, _ := last.Enqueue(ctx)
	n, err := last.Await(ctx, id)
	fmt.Println(n, err)
	// Output: 6 <nil>
}

// A step that fails for good fails its workflow: the steps after it never
// run, and Await returns a *WorkflowError naming the step (its label: the
// task's name) and wrapping the job's *JobError.
func ExampleStep_Await_workflowError() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	check := runtime.NewTask[int, int]("check_length").With(c)
	var published []int // only the worker's one handler goroutine writes it
	publish := runtime.NewTask[int, int]("publish_count").With(c)
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 1, Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	runtime.Handle(w, check, func(ctx context.Context, n int) (int, error) {
		if n > 2 {
			return 0, fmt.Errorf("%w: %d words, at most 2", runtime.SkipRetry, n)
		}
		return n, nil
	})
	runtime.Handle(w, publish, func(ctx context.Context, n int) (int, error) {
		published = append(published, n)
		return n, nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()

	last := runtime.Then(runtime.Then(tasks.CountWords.With(c).Step(tasks.Text{Body: "one two three"}), check), publish)
	id, _ := last.Enqueue(ctx)
	_, err := last.Await(ctx, id)
	var we *runtime.WorkflowError
	var je *runtime.JobError
	if errors.As(err, &we) && errors.As(err, &je) {
		fmt.Println(we.Step, je.Message)
	}
	stop()
	<-done
	fmt.Println(len(published))
	// Output:
	// check_length bananas: skip retry: 3 words, at most 2
	// 0
}
