// Package queue is the Redis data model of Bananas: the key layout, the job
// envelope, and every state transition of a job, each one Lua script.
//
// # What it owns, and what it must not know
//
// queue knows go-redis, msgpack and the scripts in scripts/. It knows nothing of
// typed tasks, handlers or workers (package runtime) nor of how results are
// encoded (package results): a result record is opaque bytes here.
//
// # Keys
//
// Every key of a route shares the route's hash tag, so every script — which
// only ever touches one route — runs on one Redis Cluster slot:
//
//	<ns>:route:{<r>}:queue:high|normal|low  LIST    ready job ids, FIFO
//	<ns>:route:{<r>}:job:<id>               HASH    the job (fields below)
//	<ns>:route:{<r>}:active                 ZSET    id -> lease deadline (ms)
//	<ns>:route:{<r>}:leases                 HASH    id -> fencing token of the current dispatch
//	<ns>:route:{<r>}:scheduled              ZSET    id -> run-at (ms): delayed jobs and retries
//	<ns>:route:{<r>}:dead                   ZSET    id -> died-at (ms)
//	<ns>:route:{<r>}:unique:<hash>          STRING  id holding a unique key, with its TTL
//	<ns>:route:{<r>}:result:<id>            STRING  failure record of a dead job, with its TTL
//	<ns>:route:{<r>}:stats                  HASH    counters
//	<ns>:routes                             SET     every route ever used
//
// The job hash holds n (task name), e0, e1, ... (the msgpack Envelope — args,
// timeout, result TTLs, description — in 60-byte slices, so that the hash
// stays a compact listpack: Redis converts a hash with any value over 64 bytes
// into a hashtable of about twice the size), p (priority), m (max retries), a (failed runs; absent
// means 0), s (d done / x dead; absent means queued), c, st, f (created, started, finished, ms) and
// err (the last failure), and r, the result record of a completed job (whose
// hash then expires with the result's TTL). Whether a queued job is pending, scheduled or
// processing is read from the set that holds its id; a job id is in exactly
// one of the ready lists, scheduled, active or dead at any instant, or in none
// once completed.
//
// Result records live in the route's slot, not under a key of their own
// slot, so that completing a job, storing its result and announcing it on
// pub/sub is one atomic, fenced script. A success's record is a field of the
// job hash (one key per completed job, one Redis call less per ack); a dead
// job's failure record has its own key, because the job stays in the
// dead-letter set for 7 days while its failure is kept for the failure TTL. Its channel is <ns>:result:{<id>}.
//
// # Scripts
//
// scripts/*.lua hold one script per transition (enqueue, fetch, claim, ack,
// fail, requeue, renew, reap, promote, replay, purge), each headed by its
// KEYS/ARGV/return contract. Every key a script touches is passed in KEYS —
// where the ids are not known in advance (promote, reap, purge) the caller reads
// them first and the script re-checks each one before it moves it. Every
// script checks all of its arguments and preconditions before its first write,
// because Redis does not roll a script back. Scripts take the time as an
// argument and never call TIME, so that the embedded server and Redis agree.
//
// # Fencing
//
// fetch gives each dispatch a fresh token (leases hash). ack, fail and
// requeue only act when the caller's token is still the job's, so a worker that
// lost its lease — its job reaped and re-run elsewhere — changes nothing when it
// finally reports.
//
// # Ids
//
// NewID makes a ULID followed by "." and the route: the id alone locates the
// job. Ids chosen by callers are found by searching the routes set.
package queue
