// Package results owns the result record of a finished job and waiting for
// it.
//
// # What it owns, and what it must not know
//
// A Record says how a job ended (its msgpack-encoded value, or its failure
// message and attempts). Storing a record is not done here: the queue's Lua
// scripts store it with its TTL and PUBLISH it on the job's result channel
// (queue.ResultChannel, given to NewWaiter) in the same
// atomic step that completes (or dead-letters) the job, fenced by the
// dispatch token. A job that keeps nothing of its success (result_ttl=0)
// has its record announced and never stored: only a waiter subscribed at
// that moment hears it, and a later Lookup finds no job. results knows
// go-redis and msgpack, and nothing of queues, workers or tasks; how to read
// a stored record is passed in as a Lookup.
//
// # One connection for every waiter
//
// A Listener multiplexes any number of channel subscriptions over one Redis
// pub/sub connection: a process waiting on ten thousand jobs holds one
// connection, not ten thousand. Subscribers of the same channel share its
// Redis subscription (reference-counted).
//
// # Never missing a result
//
// Wait subscribes to the job's channel and waits for Redis to confirm the
// subscription, and only then reads the stored record. A record stored
// before the confirmation is found by that read; one stored after it is
// published after it, and so delivered. Should the pub/sub connection drop,
// go-redis re-subscribes; the Listener notices the repeated confirmation and
// tells waiters (Reconnected) to read the stored record again, and a slow
// safety re-read (2s) covers anything else.
package results
