// Package queue is the Redis data model of Bananas: the key layout, the job
// envelope, and every state transition of a job, each one Lua script.
//
// # What it owns, and what it must not know
//
// queue knows go-redis, msgpack and the scripts in scripts/. It knows nothing of
// typed tasks, handlers or workers (package runtime) nor of how results are
// encoded (package results): a result record is opaque bytes here.
//
// # The Queue and its facets
//
// A Queue is the core: the Redis client, the key layout (Keys), the
// scripts, the clock (Now, SyncClock), the routes set and shard counts, and
// the small records of coordination — keeper locks (Keep), Once keys,
// worker heartbeats (Beat), cron state. Everything else is on one of its
// facets, each a field of the Queue with the methods of one concern, in
// files of its own:
//
//	q.Jobs       a job's life: enqueue, fetch, hand-back, ack, fail, requeue,
//	             renew, reap, promote, progress, cancel, delete, lookup
//	             (enqueue*.go, fetch.go, settle.go, reap.go, promote.go,
//	             progress.go, idle.go, admin.go, inspect.go)
//	q.Flows      flow control: route and task limits, flow state, the sweep
//	             of held flows (limits.go, flow.go)
//	q.Ops        what operators do and read: pause, the dead-letter queue,
//	             depths, counters, the jobs listing, the stats series, the
//	             pruning of idle routes (admin.go, dlq.go, inspect.go,
//	             list.go, series.go, prune.go)
//	q.Ended      the ended lists the task history drains (ended.go)
//
// facets.go declares the facets; each is a value holding the Queue, so
// q.Jobs.Ack costs what a method of the Queue would.
//
// What is not every job's — a workflow's record and its scripts — lives
// with its owner (runtime/internal/workflows/redisstore), which runs its
// scripts on the Queue's client (Client) with keys named here
// (WorkflowKey, WorkflowIndex, WorkflowList, WorkflowChannel) and scripts
// assembled by the same loader as queue's own (LoadLua).
//
// # Keys
//
// Every key of a route shares the route's hash tag, so every script — which
// only ever touches one route — runs on one Redis Cluster slot:
//
//	<ns>:route:{<r>}:queue:high|normal|low  LIST    ready job ids, FIFO
//	<ns>:route:{<r>}:payloads               HASH    id -> payload of a light job (below)
//	<ns>:route:{<r>}:job:<id>               HASH    a job with a hash of its own (fields below)
//	<ns>:route:{<r>}:active                 ZSET    lease group token -> deadline (ms)
//	<ns>:route:{<r>}:leases                 HASH    id -> token of the lease group it is leased in
//	<ns>:route:{<r>}:groups                 HASH    lease group token -> jobs still leased in it
//	<ns>:route:{<r>}:scheduled              ZSET    id -> run-at (ms): delayed jobs and retries
//	<ns>:route:{<r>}:dead                   ZSET    id -> died-at (ms)
//	<ns>:route:{<r>}:unique:<hash>          STRING  id of the job holding a unique key, with its TTL; freed by the script that ends the hold (scripts/_unique.lua)
//	<ns>:route:{<r>}:result:<id>            STRING  result record of a finished job, with its TTL
//	<ns>:route:{<r>}:progress:<id>          STRING  a running job's progress, the run's attempt and lease token in it, with a TTL (progress.go)
//	<ns>:route:{<r>}:stats                  HASH    counters
//	<ns>:route:{<r>}:receipt:<call>         STRING  reply of an enqueue call with a chosen id, for its retry (10 min)
//	<ns>:route:{<r>}:garbage:<id>           any     a job key of the wrong type, set aside when its job is dead-lettered
//	<ns>:route:{<r>}:paused                 STRING  exists while the route is paused (any type pauses): when it was paused (ms)
//	<ns>:route:{<r>}:cancels                SET     ids of running jobs whose cancellation was asked for
//	<ns>:route:{<r>}:history:<hour>         HASH    the stats series: per-minute counts and time buckets of that hour, 25 h (series.go)
//	<ns>:route:{<r>}:cron:<name>            HASH    a cron entry's state: tick, last and next run, run count, last job and error
//	<ns>:route:{<r>}:idle                   ZSET    waiting workers: wake channel -> until when the entry holds (ms) (idle.go)
//	<ns>:route:{<r>}:keeper                 STRING  the token of the process that promotes, reaps and purges the route (keep.lua), with its TTL
//	<ns>:route:{<r>}:keyed:high|normal|low  ZSET    waiting keyed jobs, scores 0, member = flow, order, id (flow.go)
//	<ns>:route:{<r>}:ring:high|normal|low   ZSET    flows with jobs waiting that may start one -> turn, served round-robin
//	<ns>:route:{<r>}:flows                  HASH    flow -> its rate state and the ids of its running jobs
//	<ns>:route:{<r>}:held                   ZSET    flows held back by a limit -> when to look again (ms)
//	<ns>:route:{<r>}:flowof                 HASH    id of a keyed job waiting or running -> its member in keyed
//	<ns>:route:{<r>}:limits                 HASH    "route" and "t:<task>" -> limits (limits.go)
//	<ns>:routes                             SET     every route used, paused or given limits (AddRoute), less those idle for RouteIdleTTL (prune.go)
//	<ns>:routes-idle                        HASH    route -> when first seen idle (ms) and its enqueued counter then (prune.go)
//	<ns>:route-shards                       HASH    route -> its shard count, 1-256, once set; absent: 1 (shard.go)
//	<ns>:workers                            ZSET    worker id -> last heartbeat (ms) (workers.go)
//	<ns>:worker:<id>                        STRING  the worker's heartbeat state (the runtime's JSON), with its TTL
//	<ns>:once:{<h>}:done                    STRING  runtime.Once: when the effect of key h was done (ms), kept 7 days (once.go)
//	<ns>:once:{<h>}:claim                   STRING  runtime.Once: the token of the caller running the effect, with its TTL
//	<ns>:workflow:{<id>}                    HASH    a workflow: its status, and its steps' states, job ids and results (redisstore)
//	<ns>:workflows                          ZSET    workflows their keeper watches: id -> when it looks next (ms)
//	<ns>:workflows:all                      ZSET    every workflow whose record may still exist: id -> submitted (ms) (redisstore)
//
// Pub/sub channels (keys.go names each):
//
//	<ns>:wake:{<r>}:<w>    a job of the route was made ready while worker w waited in the idle set (it fetches)
//	<ns>:wake:{<r>}        a ready list of the route went from empty to non-empty (for workers that take only some tasks)
//	<ns>:keeper:{<r>}      the route's keeper gave its lock up (the processes standing by try to take it at once)
//	<ns>:cancel:{<r>}      the id of a running job of the route whose cancellation was asked for
//	<ns>:schedule          the run-at (ms) of a newly scheduled job (a sleeping promoter wakes earlier)
//	<ns>:result:{<id>}     the result record of the job, as it finishes (Await, Call)
//	<ns>:once:{<h>}        the effect of Once key h was done ("done") or its claim given up ("released")
//	<ns>:workflow:{<id>}   the workflow ended: completed, failed or canceled
//
// A Once key is the caller's and may hold any byte: h is its SHA-256, the
// first 128 bits in hex, a hash tag of its own (OnceKeysOf).
//
// The stats series of a route (series.go: the per-minute counts behind the
// charts and GET /api/v1/stats) lives in route:{<r>}:history:<hour>. The key
// keeps that name, which servers already hold, so that an upgrade keeps their
// last 25 h of charts; in code it is the series (Keys.Series, Ops.Series),
// and "history" means the task history of package history alone.
//
// # Light jobs and job hashes
//
// A job enqueued ready to run is light: its id goes in a ready list and its
// payload — "name|priority|max retries|created ms|envelope" — in one field of
// the route's payloads hash, where it stays while the job waits and runs. That
// is one hash field per job instead of a key, a hash and eight fields: about
// 260 bytes of Redis memory per pending job instead of 320, and an enqueue that
// needs no per-job check (push.lua, see enqueuePlain) when its id is fresh and
// it has no unique key. fetch.lua returns the payload with the id, so a light job costs no
// second round trip. A light job may hold a unique key: its payload then
// starts with "|key|until|ttl|" (push_unique.lua, see enqueueLightUnique),
// which names the key for the scripts that end the job to free it
// (scripts/_unique.lua); a job hash names it in fields u, uu, ut.
//
// A job gets a hash of its own when it is scheduled for later (Delay, a retry),
// and a light job gets one (bn_materialize in scripts/_prelude.lua) the moment
// it fails or its lease is lost, so retries, the dead-letter set and replay see
// one kind of job. The hash holds n (task name), e0, e1, ... (the msgpack
// Envelope — args, timeout, result TTLs, description — in 60-byte slices, so
// that the hash stays a compact listpack: Redis converts a hash with any value
// over 64 bytes into a hashtable of about twice the size), p (priority), m (max
// retries), a (failed runs; absent means 0), s (x dead; absent means waiting or
// running), c, st, f (created, started, finished, ms) and err (the last
// failure). Whether a job is pending, scheduled or processing is read from the
// set that holds its id; a job id is in exactly one of the ready lists,
// scheduled, active or dead at any instant, or in none once finished.
//
// A finished job is its result record: ack.lua stores the record under the
// result key with the result TTL, announces it on <ns>:result:{<id>} and drops
// the payload or the hash, in one fenced script. A job whose envelope says
// KeepNothing (result_ttl=0) is announced and dropped, and no record is
// stored: nothing of it is left. A dead job keeps its hash in
// the dead-letter set for 7 days while its failure record lives for the
// failure TTL. Records live in the route's slot so that completing a job,
// storing its result and announcing it stay one atomic step.
//
// # Scripts
//
// scripts/*.lua hold one script per transition (enqueue, push and push_unique, fetch,
// claim, ack, fail, requeue, handback, renew, reap, promote, replay, purge,
// cron, progress, and the admin actions pause, resume, remove — delete and cancel —,
// canceled and cancels; and, outside routes, keep, unlock and relock for
// locks, once_claim, once_done and once_release for runtime.Once), each
// headed by its KEYS/ARGV/return contract; every
// state change is one of them. The shared Lua of scripts/_*.lua is a library:
// each script is loaded with only the shared definitions it names, directly
// or through one another (scripts.go says the shapes those files may hold).
// LoadLua gives that loader to a package with scripts of its own (the
// workflows'): its scripts draw on queue's shared files and its own.
// Every key a script touches is passed in KEYS —
// where the ids are not known in advance (promote, reap, purge) the caller reads
// them first and the script re-checks each one before it moves it. Every
// script checks all of its arguments and preconditions before its first write,
// because Redis does not roll a script back — the types of the keys it will
// write and the fields of a job it reads included: garbage in Redis is
// skipped, or dead-lettered saying why, never half-written around.
// list.lua and lookup.lua only read: a page of a listing, and one job's
// places in one atomic step (a MULTI/EXEC would do, but Redis refuses every
// MULTI at maxmemory, reads included).
//
// At maxmemory with noeviction Redis refuses a script's commands that may
// grow memory only until the script's first write, then lets it finish: so a
// script that frees memory writes that first (ack.lua drops the payloads and
// leases before it stores the result records), and a full Redis still drains.
//
// Every script is harmless when it runs twice with the same arguments: a reply
// can be lost after the script ran, and go-redis resends the command (or the
// whole pipeline). Each script's header says why its second run changes
// nothing; docs/DESIGN-NOTES.md has the list. A fetch whose reply never came
// may have leased jobs nobody runs: the caller hands them back (HandBack,
// LostFetch) without counting an attempt.
//
// Scripts take the time as an argument and never call TIME, so that the
// embedded server and Redis agree; that time is Redis's own, as the host best
// knows it (Queue.Now: TIME read at the last sync, advanced by the host's
// monotonic clock, see clock.go), so that leases and run-at times are judged
// on one clock and no step of a host's wall clock moves them.
//
// # Flow control
//
// A job enqueued with a key (NewJob.Keyed) belongs to a flow, the jobs of one
// task and one key, and waits in the keyed set of its priority instead of a
// ready list. fetch.lua serves each priority's flows round-robin from its
// ring, and holds back — to the held set, off the ring — a flow at its
// task's cap or out of its rate, so it holds nobody else back; the route's
// own limits bound the whole fetch. Every script that ends a lease frees
// the job's slot; a lease that runs out frees it too. flow.go has the
// diagram, scripts/_flow.lua the shared steps.
//
// # Workflows
//
// A workflow's record is one hash under its own hash tag; its steps' jobs
// are ordinary jobs on their routes, each made under a job id fixed when the
// workflow was submitted. Its record, scripts and keeper are the workflows'
// (runtime/internal/workflows and its redisstore); queue names its keys and
// carries, in a job's envelope, the workflow and step the job is of.
//
// # Pausing and canceling
//
// A paused route keeps taking jobs in, and no worker takes one out: fetch.lua
// and claim.lua look at its paused key, after recognising a retried call's
// token and before any write. A job that waits can be deleted or canceled at
// once (remove.lua: out of its list or the scheduled set, a cancel's record
// stored as its result); a running job is only asked to stop — its id joins
// the cancels set and the route's cancel channel (<ns>:cancel:{<r>}) carries
// it — and the worker holding it finishes it with canceled.lua, fenced like
// ack. A request stands for the run it was made against: cancels.lua, which
// workers run at each lease renewal to learn of requests they missed, drops
// those whose job is no longer leased, so a job that ends otherwise leaves no
// request behind.
//
// # Fencing and lease groups
//
// Each fetch call leases its jobs as one lease group with a fresh token: the
// leases hash maps each job to the token, the active set holds the token with
// the group's deadline and the groups hash how many of its jobs are still
// leased. ack, fail and requeue only act when the caller's token is still the
// job's, so a worker that lost its lease — its job reaped and re-run elsewhere —
// changes nothing when it finally reports; each release counts the group down
// and the last one takes it out of the active set. Renewal extends a group,
// and the reaper, given the groups whose deadline passed, reaps the jobs still
// leased in them. One member per fetch call instead of one per job: the active
// set is small, and a zset of up to 128 members is a listpack, where each insert
// scans and moves memory (2.4 µs a member measured in a drain).
//
// # Shards
//
// A sharded route spreads its jobs over N hash tags, so over a cluster's
// masters: shard 0 is the route itself, shard i > 0 the route named with a
// suffix, <r>~<k> (ShardNames picks k so the shards' slots fall in N equal
// slot ranges). To every script a shard is a route of its own, with every key
// above; the routes set lists shards by name. ValidRoute refuses the ~, so
// a user's route is never a shard; ValidShardRoute accepts both.
//
// # Ids
//
// NewID makes a ULID followed by "." and the route — the shard, for a job of
// a sharded route: the id alone locates the job. Ids chosen by callers are found by searching the routes set.
package queue
