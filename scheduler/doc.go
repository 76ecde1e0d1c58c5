// Package scheduler runs what happens at a time rather than on a push.
//
// # The promoter
//
// Delayed jobs and retries wait in each route's scheduled set. A Promoter
// moves them to their ready lists when they fall due. It does not poll on a
// fixed period: it sleeps until the earliest scheduled job of its routes, and
// is woken earlier through Wake when a job is scheduled sooner (the runtime
// feeds Wake from the schedule pub/sub channel). A safety period bounds a
// sleep when nothing is due, covering a wake-up lost in a reconnect.
//
// # Cron
//
// A Cron fires cron entries (robfig/cron v3 specs: five fields or
// descriptors such as @every 1s, in an IANA time zone). Each tick of each
// entry is enqueued exactly once however many Cron runners run, in however
// many processes: firing is a compare-and-set on the tick in the entry's state
// hash, inside the same Lua script that enqueues the tick's job, in the
// route's slot (queue.FireCron). No lock is held, so none can expire half-way
// through a fire. Every runner computes the same ticks (the schedule's own
// times), and a runner that wakes late fires the latest due tick once: ticks
// missed while no scheduler ran are not back-filled.
//
// # Schedules as data
//
// Schedules (schedule.go) are records in Redis, made, changed, paused and
// deleted at run time: one hash per schedule in one of Buckets buckets,
// each bucket with an index of when its schedules next need a scheduler, a
// bucket's keys sharing a hash tag (so one script claims many of them, and
// a cluster spreads the buckets over its masters). Their Lua is in
// scripts/, assembled by queue.LoadLua. A ScheduleRunner fires them, in
// batches: ticks are claimed in their bucket's slot (compare-and-set on
// each next tick), their jobs enqueued in the route's slot (compare-and-set
// on each schedule's last enqueued tick, in the script that writes the
// job), and the claims marked done. Each step is retry-safe, and a claim
// left by a runner that died is finished by any other, so each tick is one
// job however many runners run. A schedule that allows overlap is handled
// Ahead of its tick, its job written scheduled and made ready at the tick by
// the runner (sched_release.lua; by the promoter ReleaseFallback later when
// the runner died), so that it is on time however many schedules share the
// tick; a pause or delete before the tick withdraws it.
//
// # The lock
//
// Lock is the classic distributed lock — SET NX PX with a random token,
// released and extended by compare-and-delete / compare-and-expire scripts
// (queue's unlock.lua and relock.lua, beside every other script) —
// for work that cannot be made a single script. Cron deliberately does not
// use it.
//
// # What it must not know
//
// scheduler knows the queue package, robfig/cron and bananastype's words
// (a schedule's overlap policy); it knows nothing of typed tasks, workers or
// the runtime.
package scheduler
