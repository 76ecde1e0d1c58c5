// Package runtime is what an application embeds to use Bananas: a Client to
// enqueue and await typed jobs, the generic Task[A, R] that generated stubs
// are, and a Worker that runs handlers.
//
// # Connecting
//
// Connect takes a URL — redis://, rediss://, redis+cluster://h1:p1,h2:p2, or
// mem:// for an embedded in-process server — and checks the server answers.
// Keys live under the namespace of $BANANAS_NAMESPACE (default "bananas"), or
// WithNamespace, so a producer and a worker started with the same environment
// meet. SetDefault makes a client the one every Task uses unless bound with
// Task.With.
//
// # Tasks
//
// A Task[A, R] is a typed handle on one kind of job: A is the arguments, R the
// result, None where there is none. bananagen declares one per annotated
// function, with the annotation's keys as defaults:
//
//	var ResizeImage = runtime.NewTask[ResizeArgs, ResizeResult]("resize_image", runtime.Route("images"))
//
// Enqueue returns a job id; EnqueueMany enqueues a slice in one round trip per
// thousand jobs; Await blocks until the job finished and returns its typed
// result or a *JobError; Call is Enqueue then Await. Arguments and results
// travel as msgpack; either one over the payload limit (1 MiB, MaxPayload) is
// refused with an error that gives its size and the limit.
//
// Enqueue options: Route, WithPriority, Delay, At, MaxRetries, Timeout, Unique,
// WithID, ResultTTL, Description, Key. An invalid option is an error of the
// enqueue, naming what is wrong; nothing is written. A duplicate (same WithID,
// or same args within a Unique window) returns the existing id with an error
// matching ErrDuplicate.
//
// EnqueueTx and EnqueueManyTx write the job into the application's database
// transaction instead (package outbox: outbox.Tx(tx) for a pgx.Tx): the job
// exists if and only if the transaction commits, and a relay moves it into
// Redis under the id returned at once (RelayOutbox; docs/OUTBOX.md).
//
// # Flow control
//
// Task.Limit caps how a task's jobs start (TaskLimits: how many run at once,
// how many start per second, minute or hour), across every worker; Task.KeyBy
// (or the Key option) keys its jobs, and the limits then hold per key, the
// keys of a priority served in turn (limits.go). A worker stores the limits
// of the tasks it registers when it starts; the queue's fetch enforces them.
//
// # Job ids and statuses
//
// A job id is an opaque string; Client.Job and Await need nothing else, on a
// single server or a cluster. A job is in exactly one state at a time:
// StatusPending (ready), StatusScheduled (delayed or waiting to retry),
// StatusProcessing (leased to a worker), StatusCompleted, StatusFailed
// (failed for good, in the dead-letter queue) or StatusCanceled (canceled
// before it ran, or while it ran: its handler's context is canceled, and it
// is not retried, even when its worker died or shut down first).
//
// # Workers
//
// NewWorker and the generated Register functions (or Handle) set a worker up;
// Run works until its context ends. A worker drains its Routes in order of
// preference and, within a route, high, normal and low priority strictly, FIFO
// within each. It never sleeps on an empty queue: an enqueue into an empty
// list publishes a wake-up the worker listens for, with a one-second safety
// poll behind it.
//
// Each running job holds a lease, renewed every Lease/3. If the worker dies
// the lease runs out and any live worker of the route recovers the job,
// counting the lost run as a failed attempt. Completion is fenced by a token
// unique to the dispatch, so a worker that lost its lease changes nothing when
// it reports late.
//
// A failed run is retried after Backoff (2^attempt s plus jitter by default)
// until MaxRetries retries are spent; then the job is dead-lettered and its
// failure becomes the result Await returns. A panic is a failure whose message
// holds the stack; a run past its timeout has its context canceled and fails.
//
// When Run's context ends the worker stops fetching, lets running jobs finish
// for ShutdownTimeout, then hands the rest back to the front of their queues
// without counting an attempt, and returns.
//
// # Batch handlers
//
// HandleBatch (generated for a task annotated with batch=) registers a
// function that takes many jobs of a task at once: up to Batch.Size of one
// key, as soon as that many are in hand or Batch.Linger after the first.
// Callers enqueue, await and call one job at a time. Each job keeps its
// slot (a batch of n jobs holds n of Concurrency), lease, attempts,
// retries, outcome and cancel; the function returns one error per job, or
// one for the whole batch (batch.go, docs/BATCHES.md).
//
// # Sharded routes
//
// admin.Inspector.SetShards spreads a route over up to 256 shards, each a hash tag
// of its own placed so that the shards fall evenly over a Redis Cluster's
// masters (queue.ShardNames). Producers spread the route's jobs over them (a
// keyed job to its flow's shard, a job with a unique key or chosen id to
// its key's shard), workers of the
// route fetch from every shard in turn and drain the shards of an earlier
// count, and everything users see names the route (runtime/internal/routeshards). Within a
// route priority then holds per shard.
//
// # Cron
//
// Schedule registers a task to be enqueued on a cron spec in a time zone
// (generated Register functions do it for //bananas:cron functions). Every
// worker runs the schedules registered on it, and each tick is enqueued
// exactly once however many do; CronStatus reads last_run, next_run,
// run_count and last_error.
//
// # Progress
//
// Progress (in a handler) says how far the job has got: a percent and a
// short note, which Client.Job, the CLI, the API and the dashboard show
// while the job's current run goes on. It only records the value in memory;
// the worker writes each job's last value at most once per ProgressEvery
// (runtime/internal/engine/progress.go, docs/DESIGN-NOTES.md).
//
// # Once
//
// Once (in a handler) and Client.Once run a side effect at most once per key
// across a job's retries, the recovery of its lease and duplicate jobs: a
// marker kept 7 days once fn succeeded makes later calls skip fn, and a
// claim renewed while fn runs makes a concurrent caller wait for the first,
// running fn itself only if the first failed or died. fn succeeding and its
// process dying before the marker is written runs fn again: docs/ONCE.md.
//
// # Main and the command line
//
// Main turns an application's main into a worker, a scheduler and an
// operator CLI: it reads its configuration from the environment (REDIS_URL,
// BANANAS_NAMESPACE, WORKER_MODE, WORKER_CONCURRENCY, ...; flags override,
// a bad value exits 2 naming the variable) and runs one of worker,
// scheduler, api, enqueue, job (and job cancel, job delete), jobs, queues,
// pause, resume, cancel, route shards, dlq (list, replay, purge), cron
// (list, run) and workers; -h or help lists them with the environment. RunCommand is the
// same without the process around it. The process (configuration,
// listeners, the worker, scheduler and api commands) is package
// runtime/internal/shell, which main.go hands a client, a worker and the
// Inspector through a narrow seam; the command line itself (parsing, usage,
// tables) is package runtime/internal/cli, over the Inspector as an
// admin.Admin. docs/OPERATIONS.md is the manual.
//
// # Embedded server
//
// mem:// runs miniredis inside the process: handy for demos, tests and
// single-binary tools. Everything above works on it, with the TTLs of results
// following the wall clock. It adds about a tenth to a program's size
// (miniredis and a Lua interpreter: 3.2 MB of a 34 MB binary); a program
// built with -tags bananas_nomem leaves it out, and mem:// then fails at
// Connect saying so.
package runtime
