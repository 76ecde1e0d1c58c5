// Package engine runs the jobs of one worker: it fetches them from Redis
// under leases into a fixed number of slots, runs each through the
// runtime's Exec under its timeout, records what the run came to, renews the
// leases of the runs in flight, recovers the jobs whose lease expired, and
// hands back what it cannot finish when it stops.
//
// # What it owns, and what it must not know
//
// It owns a worker's slots, its runs in flight and its background loops,
// each a small type with its own state and a Run(ctx) (or a method the
// Engine calls): the fetcher, the executor, the renewer, the reaper,
// retention, the heartbeater, the hand-backs of lost fetches and the
// flusher that writes its runs' progress (progress.go). It builds
// the result record (package results) of every run it ends, and the bananastype.JobEnd
// it tells of every end it recorded (jobend.go): a job completed, retried,
// dead-lettered, canceled, snoozed or handed back at shutdown, by a run of
// this worker or by its reaper. One bananastype.JobEnd per end, told to Config.Sinks
// only after the Redis write that recorded the end succeeded; an end whose
// write failed or changed nothing (its lease lost) is not told. The
// worker's counters of ends are one of those sinks.
//
// It works the routes Config.RoutesNow returns at each pass (the shards of
// sharded routes, which the runtime keeps current), else Config.Routes; a
// shard is a route like any other here.
//
// It knows package queue's types, and Redis only through the Queue
// interface (*queue.Queue), results, and the worker's metrics only through
// the Metrics interface (run times, waits, overruns). It must not know task
// types, handlers, codecs, middleware or the public API of package runtime:
// a run's work is the Config.Exec function, which returns an Outcome; the
// job's value in the handler's context (runtime.CurrentJob) is opaque here.
//
// # A job's path
//
// fetcher.Run reserves slots and fetches (queue.Jobs.Fetch) → executor.startAll
// arms one timeout per group of runs → executor.runJob calls Exec → on
// success the ack is coalesced and not waited for (queue.Jobs.AckAsync), on
// failure queue.Jobs.Fail retries or dead-letters it; the slot is handed on as
// soon as Exec returns (slots.handOn) → the renewer extends the lease of
// every run in flight until its outcome is recorded → once recorded, its
// end is told (Config.tell), and the run stops being in flight.
//
// # Words
//
// A run's outcome is decided (run.decided: by Exec's return, its timeout or
// a cancel, whichever comes first), then recorded (run.recording: written
// to Redis, or the job handed back at shutdown; set once). A slot is held
// from the fetcher's reservation until the run's Exec returns; the run then
// holds a record token until its outcome is recorded (slots).
package engine
