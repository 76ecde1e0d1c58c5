// Package bananastest tests code that enqueues and runs Bananas jobs, in the
// process, with no redis-server: New starts an embedded server (mem://) for
// one test, with a client and a worker that has the package's tasks.
//
// How New learns the tasks: pass the generated Register function of each
// task package (bananas_gen.go), as runtime.Main takes them:
//
//	h := bananastest.New(t, tasks.Register)
//
// # Reading a test
//
// A test enqueues through the generated stubs bound to the harness's client,
// asserts what is waiting with typed predicates over the args, runs it, and
// reads what died:
//
//	_, err := tasks.SendEmail.With(h.Client).Enqueue(ctx, tasks.EmailArgs{To: "ana"})
//	bananastest.RequireEnqueued(t, h.Client, tasks.SendEmail, func(a tasks.EmailArgs) bool { return a.To == "ana" })
//	report := h.Drain(t)           // runs what is ready with the registered handlers
//	dead := bananastest.RequireDead(t, h.Client, tasks.SendEmail, nil)
//
// Code under test that enqueues through the default client (the stubs
// without With) sees the harness once h.SetDefault(t) made its client the
// default; that is process-wide, so such tests must not run in parallel.
//
// "Enqueued" means waiting to run: pending, or scheduled (delayed, or waiting
// for a retry). "Dead" means failed for good, in the dead-letter queue. The
// assertions take a *runtime.Client, not the harness, so they work as well on
// a client of a real Redis server. A job they return is the one job type
// (bananastype.Job, what Client.Job and the listings show) with its args
// decoded as the task's args type (Job[A]).
//
// # Failures
//
// An assertion that does not hold stops the test (Fatalf) with a message
// naming the task and what it found: every waiting (or dead) job of the task
// with its args as JSON. The assertions take TB, the part of testing.TB they
// use, so that their own tests can hand them a recorder.
//
// # What it owns, and what it must not know
//
// It owns the harness and the assertions. It uses the runtime's public API
// only — Connect, Worker, Inspector listings, JobEnd — as any user could;
// it must not read Redis keys or know the runtime's internals, so that what
// it sees is what an operator's listing shows.
package bananastest
