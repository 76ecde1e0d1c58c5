// Package worker assembles and runs one worker of the runtime: the engine
// that runs its jobs (package engine) and the loops around it that a worker
// owns while it runs — the watcher of its routes' shards (routeshards), the
// keeper locks of the routes it keeps (scheduler.Keeper), the promoter of due
// jobs and the schedule channel that wakes it, the cron runner, the
// history writer (historian), the workflow keeper, the progress flusher, and
// the pub/sub channels that wake, cancel and kick them. It stores the
// registered tasks' limits on every shard they hold on, writes the worker's
// heartbeat record, and reads the live workers' records (Live, Takers).
//
// # What it owns, and what it must not know
//
// It owns the order a worker starts and stops its parts in, and what each
// part is given: Run takes a Config of plain values and functions, and
// returns when the engine has shut down and every loop has ended.
//
// It knows queue, results, scheduler, the history store's interface and
// the other internal packages it wires (engine, routeshards, historian,
// workflows, metrics), and admin's Worker record. It must not know task
// types, handlers, codecs, middleware, hooks or the public API of package
// runtime: a run is Config.Exec, a handler's context value is
// Config.JobValue, a task is a name, a route and its limits (Task), and a
// cron entry is scheduler's.
package worker
