package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	crontasks "github.com/bananas-go/bananas/examples/cron/tasks"
	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Routes is the overview of a deployment: every route's jobs by place and
// priority, whether it is paused, and how many live workers take it.
func ExampleInspector_Routes() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)

	tasks.ResizeImage.With(c).Enqueue(ctx, tasks.ResizeArgs{URL: "https://x.test/a.png", Width: 10})
	tasks.ResizeImage.With(c).Enqueue(ctx, tasks.ResizeArgs{URL: "https://x.test/b.png", Width: 10})
	tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "ann@x.test"})
	tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "bob@x.test"}, runtime.Delay(time.Hour))

	routes, err := in.Routes(ctx)
	if err != nil {
		panic(err)
	}
	for _, r := range routes {
		fmt.Printf("%s: high %d, normal %d, low %d, scheduled %d, workers %d\n",
			r.Route, r.High, r.Normal, r.Low, r.Scheduled, r.Workers)
	}
	// default, the route of the other registered tasks, has no job: it is
	// known, and shows with zeros.
	// Output:
	// default: high 0, normal 0, low 0, scheduled 0, workers 0
	// email: high 1, normal 0, low 0, scheduled 1, workers 0
	// images: high 0, normal 2, low 0, scheduled 0, workers 0
}

// Jobs lists a page of jobs that a JobQuery selects; pass the page's Next as
// the Cursor of the next query until it is "".
func ExampleInspector_Jobs() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)

	for _, to := range []string{"ann@x.test", "bob@x.test", "cy@x.test"} {
		tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: to}, runtime.Description("newsletter to "+to))
	}

	q := admin.JobQuery{Route: "email", State: runtime.StatusPending, Limit: 2}
	for {
		page, err := in.Jobs(ctx, q)
		if err != nil {
			panic(err)
		}
		for _, j := range page.Jobs {
			fmt.Println(j.Name, j.Status, j.Description)
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	// Output:
	// send_email pending newsletter to ann@x.test
	// send_email pending newsletter to bob@x.test
	// send_email pending newsletter to cy@x.test
}

// Cron lists the cron entries registered by the register functions given
// to NewInspector, with their state: last and next run, run count, last error.
func ExampleInspector_Cron() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, crontasks.Register)

	entries, err := in.Cron(ctx)
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		fmt.Printf("%s %q tz=%q route=%s runs=%d\n", e.Name, e.Spec, e.TZ, e.Route, e.RunCount)
	}
	// Output:
	// tick "@every 2s" tz="" route=default runs=0
	// nightly_report "0 3 * * *" tz="Europe/Berlin" route=reports runs=0
}

// Workers lists the live workers of the namespace, in any process, from the
// heartbeats they write while they run.
func ExampleInspector_Workers() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	w := runtime.NewWorker(c, runtime.WorkerOptions{
		Routes: []string{"images", "email"}, Concurrency: 8, Logger: slog.New(slog.DiscardHandler),
	})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	in := runtime.NewInspector(c, tasks.Register)
	var workers []admin.Worker
	deadline := time.Now().Add(10 * time.Second)
	for len(workers) == 0 && time.Now().Before(deadline) { // the worker's first heartbeat
		time.Sleep(5 * time.Millisecond)
		workers, _ = in.Workers(ctx)
	}
	for _, st := range workers {
		fmt.Println(st.Routes, st.Priorities, st.Concurrency, st.InFlight)
	}
	// Output: [images email] [high normal low] 8 0
}

// Cancel takes back a job: a waiting one is removed at once, a running one
// has its context canceled on its worker. Either way it is not retried, and
// Await returns an error matching ErrJobCanceled.
func ExampleInspector_Cancel() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)

	id, _ := tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "ann@x.test"}, runtime.Delay(time.Hour))
	status, err := in.Cancel(ctx, id)
	fmt.Println(status, err)

	_, err = tasks.SendEmail.With(c).Await(ctx, id)
	fmt.Println(errors.Is(err, runtime.ErrJobCanceled))
	// Output:
	// canceled <nil>
	// true
}

// Delete removes a pending or scheduled job for good, leaving no trace.
func ExampleInspector_Delete() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)

	id, _ := tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "ann@x.test"})
	fmt.Println(in.Delete(ctx, id))

	_, err := c.Job(ctx, id)
	fmt.Println(errors.Is(err, runtime.ErrJobNotFound))
	// Output:
	// <nil>
	// true
}

// Pause stops every worker from taking a route's jobs (enqueues go on);
// Resume lets them take them again.
func ExampleInspector_Pause() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)
	tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "ann@x.test"})

	paused := func() bool {
		routes, _ := in.Routes(ctx)
		for _, r := range routes {
			if r.Route == "email" {
				return r.Paused
			}
		}
		return false
	}
	fmt.Println(in.Pause(ctx, "email"), paused())
	fmt.Println(in.Resume(ctx, "email"), paused())

	err := in.Pause(ctx, "emial") // a typo pauses nothing
	fmt.Println(errors.Is(err, runtime.ErrUnknownRoute))
	// Output:
	// <nil> true
	// <nil> false
	// true
}

// CancelWaiting cancels every pending and scheduled job of a route, or of
// one task on it: each ends canceled, as Cancel would end it.
func ExampleInspector_CancelWaiting() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)
	id, _ := tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "ann@x.test"})
	tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "bob@x.test"}, runtime.Delay(time.Hour))

	n, err := in.CancelWaiting(ctx, "email", "send_email")
	fmt.Println(n, err)
	job, _ := in.Job(ctx, id)
	fmt.Println(job.Status)
	// Output:
	// 2 <nil>
	// canceled
}

// Replay sends a dead-lettered job back to its queue with its attempts reset,
// once what made it fail is fixed.
func ExampleInspector_Replay() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)

	// A job that fails for good (no retries): the worker dead-letters it.
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"email"}, Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	id, _ := tasks.SendEmail.With(c).Enqueue(ctx, tasks.EmailArgs{To: "nobody"}, runtime.MaxRetries(0))
	tasks.SendEmail.With(c).Await(ctx, id)
	stop()
	<-done

	info, _ := c.Job(ctx, id)
	fmt.Println(info.Status, info.Error)

	fmt.Println(in.Replay(ctx, id))
	info, _ = c.Job(ctx, id)
	fmt.Println(info.Status, info.Attempts)
	// Output:
	// failed invalid recipient "nobody": no @
	// <nil>
	// pending 0
}

// ReplayDead replays every dead job of a route and task ("" for all) and
// says how many.
func ExampleInspector_ReplayDead() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)

	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"email"}, Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	ids, _ := tasks.SendEmail.With(c).EnqueueMany(ctx, []tasks.EmailArgs{{To: "nobody"}, {To: "no one"}}, runtime.MaxRetries(0))
	for _, id := range ids {
		tasks.SendEmail.With(c).Await(ctx, id)
	}
	stop()
	<-done

	n, err := in.ReplayDead(ctx, "email", "send_email")
	fmt.Println(n, err)
	// Output: 2 <nil>
}

// PurgeDead deletes dead jobs for good: of a route and task ("" for all)
// that died longer ago than a duration (0 for all).
func ExampleInspector_PurgeDead() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()
	in := runtime.NewInspector(c, tasks.Register)

	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"email"}, Logger: slog.New(slog.DiscardHandler)})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	ids, _ := tasks.SendEmail.With(c).EnqueueMany(ctx, []tasks.EmailArgs{{To: "nobody"}, {To: "no one"}}, runtime.MaxRetries(0))
	for _, id := range ids {
		tasks.SendEmail.With(c).Await(ctx, id)
	}

	n, err := in.PurgeDead(ctx, "", "", 0)
	fmt.Println(n, err)
	routes, _ := in.Routes(ctx)
	for _, r := range routes {
		if r.Route == "email" {
			fmt.Println(r.Route, r.Dead)
		}
	}
	// Output:
	// 2 <nil>
	// email 0
}
