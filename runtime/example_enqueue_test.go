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

// Connect to a deployment once per process, make the client the default of
// every task, and Close it at exit. mem:// is an embedded server; a real
// deployment passes redis://host:6379 (or $REDIS_URL).
func ExampleConnect() {
	ctx := context.Background()
	c, err := runtime.Connect(ctx, "mem://")
	if err != nil {
		panic(err)
	}
	defer c.Close()
	runtime.SetDefault(c)

	id, err := tasks.CountWords.Enqueue(ctx, tasks.Text{Body: "hello world"})
	if err != nil {
		panic(err)
	}
	info, _ := c.Job(ctx, id)
	fmt.Println(info.Name, info.Status)
	// Output: count_words pending
}

// Enqueue adds a job with the task's defaults (here, the route "images" that
// resize_image is annotated with) and returns its id at once; a worker of the
// route runs it.
func ExampleTask_Enqueue() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	id, err := tasks.ResizeImage.With(c).Enqueue(ctx, tasks.ResizeArgs{URL: "https://x.test/cat.png", Width: 100})
	if err != nil {
		panic(err)
	}
	info, _ := c.Job(ctx, id)
	fmt.Println(info.Name, info.Route, info.Priority, info.Status)
	// Output: resize_image images normal pending
}

// Delay (or At) holds the job back: it is scheduled until then.
func ExampleTask_Enqueue_delay() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	id, _ := tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "ann@x.test", Subject: "Your trial ends"},
		runtime.Delay(time.Hour))
	info, _ := c.Job(ctx, id)
	fmt.Println(info.Status, info.ScheduledAt.Sub(info.CreatedAt).Round(time.Minute))
	// Output: scheduled 1h0m0s
}

// WithPriority overrides the task's default priority: a worker takes every
// high job of a route before any normal one.
func ExampleTask_Enqueue_priority() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	id, _ := tasks.CountWords.With(c).Enqueue(ctx, tasks.Text{Body: "urgent"}, runtime.WithPriority(runtime.PriorityHigh))
	info, _ := c.Job(ctx, id)
	fmt.Println(info.Priority)
	// Output: high
}

// Route sends one job to another route than the task's own: only workers
// that take that route run it.
func ExampleTask_Enqueue_route() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	id, _ := tasks.ResizeImage.With(c).Enqueue(ctx, tasks.ResizeArgs{URL: "https://x.test/big.png", Width: 4000},
		runtime.Route("images-large"))
	info, _ := c.Job(ctx, id)
	fmt.Println(info.Route)
	// Output: images-large
}

// Unique drops an enqueue whose args a job of the same task got within the
// window: the error matches ErrDuplicate and the id is the first job's.
func ExampleTask_Enqueue_unique() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	welcome := tasks.EmailArgs{To: "ann@x.test", Subject: "Welcome"}
	first, err := tasks.SendEmail.With(c).Enqueue(ctx, welcome, runtime.Unique(time.Hour))
	fmt.Println(err)
	again, err := tasks.SendEmail.With(c).Enqueue(ctx, welcome, runtime.Unique(time.Hour))
	fmt.Println(errors.Is(err, runtime.ErrDuplicate), again == first)
	// Output:
	// <nil>
	// true true
}

// WithID gives the job an id of your own, such as a key of your database:
// enqueueing it twice is an ErrDuplicate, so a retried request enqueues once.
func ExampleTask_Enqueue_withID() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	receipt := tasks.EmailArgs{To: "ann@x.test", Subject: "Receipt for order 1042"}
	id, err := tasks.SendEmail.With(c).Enqueue(ctx, receipt, runtime.WithID("receipt-1042"))
	fmt.Println(id, err)
	_, err = tasks.SendEmail.With(c).Enqueue(ctx, receipt, runtime.WithID("receipt-1042"))
	fmt.Println(errors.Is(err, runtime.ErrDuplicate))
	// Output:
	// receipt-1042 <nil>
	// true
}

// MaxRetries and Timeout bound the work one job may take: how many failed
// runs are retried, and how long each run may last.
func ExampleTask_Enqueue_retriesAndTimeout() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	id, _ := tasks.ResizeImage.With(c).Enqueue(ctx, tasks.ResizeArgs{URL: "https://x.test/cat.png", Width: 100},
		runtime.MaxRetries(5), runtime.Timeout(30*time.Second))
	info, _ := c.Job(ctx, id)
	fmt.Println(info.MaxRetries, info.Timeout)
	// Output: 5 30s
}

// Description attaches a note for people: `job` and the dashboard show it.
func ExampleTask_Enqueue_description() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	id, _ := tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "ann@x.test", Subject: "Password reset"},
		runtime.Description("requested from the login page"))
	info, _ := c.Job(ctx, id)
	fmt.Println(info.Description)
	// Output: requested from the login page
}

// EnqueueMany enqueues a batch in one round trip; the ids come back in the
// order of the args.
func ExampleTask_EnqueueMany() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }() // graceful stop, before c.Close

	texts := []tasks.Text{{Body: "one"}, {Body: "one two"}, {Body: "one two three"}}
	ids, err := tasks.CountWords.With(c).EnqueueMany(ctx, texts)
	if err != nil {
		panic(err)
	}
	for _, id := range ids {
		n, _ := tasks.CountWords.With(c).Await(ctx, id)
		fmt.Println(n)
	}
	// Output:
	// 1
	// 2
	// 3
}

// Await waits for a job enqueued earlier, by its id (from this process or
// another), and returns its typed result.
func ExampleTask_Await() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"images"}, Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }() // graceful stop, before c.Close

	id, _ := tasks.ResizeImage.With(c).Enqueue(ctx, tasks.ResizeArgs{URL: "https://x.test/cat.png", Width: 100})
	// ... store id, answer the request, come back later ...
	awaitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := tasks.ResizeImage.With(c).Await(awaitCtx, id)
	fmt.Println(res.URL, err)
	// Output: https://x.test/cat-100w.png <nil>
}

// Call is Enqueue then Await: a typed remote call through the queue.
func ExampleTask_Call() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }() // graceful stop, before c.Close

	n, err := tasks.CountWords.With(c).Call(ctx, tasks.Text{Body: "the quick brown fox"})
	fmt.Println(n, err)
	// Output: 4 <nil>
}

// Job reads a snapshot of any job by id: its status, attempts, last error
// and args (as JSON, when the program declares its task).
func ExampleClient_Job() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }() // graceful stop, before c.Close

	id, _ := tasks.CountWords.With(c).Enqueue(ctx, tasks.Text{Body: "a b c"})
	tasks.CountWords.With(c).Await(ctx, id)

	info, err := c.Job(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Name, info.Status, info.Attempts, string(info.Args))

	_, err = c.Job(ctx, "no-such-job")
	fmt.Println(errors.Is(err, runtime.ErrJobNotFound))
	// Output:
	// count_words completed 1 {"Body":"a b c"}
	// true
}
