// Package redisstore is the Redis side of workflows: a workflow's record,
// the Lua scripts that move it (scripts/wf_*.lua, one per transition, and
// scripts/_workflow.lua, the steps of the record they share), and the Go
// that runs them on a Queue's client (Store, the workflows.Store of a
// program).
//
// A workflow is a graph of steps, each an ordinary job on its own route,
// that starts only when its predecessors completed, with their results as
// its args. Its record is one hash under its own hash tag; its keys are
// named by package queue (queue.WorkflowKey and the others, beside every
// other key of the namespace), and every script is given each key it
// touches through KEYS:
//
//	<ns>:workflow:{<id>}   HASH  status, steps, their states, job ids, results (scripts/_workflow.lua)
//	<ns>:workflows         ZSET  id of a workflow not yet settled -> when its keeper looks at it (ms)
//	<ns>:workflows:all     ZSET  id of every workflow whose record may still exist -> created (ms) (list.go)
//	<ns>:workflow:{<id>}   channel: the workflow ended (completed, failed or canceled)
//
// A key rotation reads the fields that hold a user's values (values.go:
// IDs, Values) and swaps them by queue's compare-and-set (SwapValues).
//
// Each script but wf_due.lua touches the record alone, so it runs on the
// record's slot of a Redis Cluster; wf_due.lua touches the index alone.
// wf_submit.lua also adds to the list when it lives on the record's node
// (a single server); on a cluster Store.Submit adds to it just before.
//
// Its steps' jobs live on other slots than its record, so no script both
// ends a step's job and makes its successor's. Each step's job id is fixed
// when the workflow is submitted, and a job is made only with its chosen
// id, so making it twice makes it once: the worker that ends a step's job
// advances the workflow (Advance) and makes the jobs it returns, then says
// so (StepsCreated); a worker that dies between any two of those calls
// leaves the workflow in the index, where the keeper finds it and does the
// rest (Due). Package workflows orders those calls.
//
//	step:  waiting --(predecessors completed)--> creating --(job made)--> created
//	         |                                     |                       |
//	         +--(a predecessor failed: canceled)   +--(workflow canceled)  +--> completed | failed | canceled
//
// # Its scripts
//
// Each script has its KEYS, ARGV and reply in a header, checks every
// argument and every key's type before its first write, and is harmless
// when run twice with the same ARGV (a lost reply is resent): the tests
// run each a second time and compare the namespace. The scripts are
// assembled by package queue's loader (queue.LoadLua), as queue's own are:
// each carries, of _workflow.lua and of queue's shared files (the
// argument and key-type checks of _checks.lua), exactly the definitions it
// names.
//
// # What it must not know
//
// Task types, codecs and the order of the calls around the record (the
// machine's, in package workflows); a step's args, results and template
// are opaque bytes here. Its tests run against real servers (redis-server
// and the embedded one); the machine's run without Redis against
// storetest, which runtime's TestWorkflowStore_ holds to what this
// package's scripts answer.
package redisstore
