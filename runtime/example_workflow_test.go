package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

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

// Task.Step is a first step of a workflow, a job of the task with args.
// A Step is a node of the graph: given as the predecessor of two steps, it
// is one step, run once, and both get its result.
func ExampleTask_Step() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	double := runtime.NewTask[int, int]("twice_count").With(c)
	triple := runtime.NewTask[int, int]("thrice_count").With(c)
	var counted atomic.Int32
	countRuns := func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
		if job.Name == "count_words" {
			counted.Add(1)
		}
		return next(ctx)
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Middleware: []runtime.Middleware{countRuns}, Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	runtime.Handle(w, double, func(ctx context.Context, n int) (int, error) { return 2 * n, nil })
	runtime.Handle(w, triple, func(ctx context.Context, n int) (int, error) { return 3 * n, nil })
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	count := tasks.CountWords.With(c).Step(tasks.Text{Body: "one two three"})
	total := runtime.Then(runtime.Gather(runtime.Then(count, double), runtime.Then(count, triple)), tasks.SumCounts.With(c))
	id, _ := total.Enqueue(ctx)
	n, err := total.Await(ctx, id)
	fmt.Println(n, err, "count_words ran", counted.Load(), "time")
	// Output: 15 <nil> count_words ran 1 time
}
