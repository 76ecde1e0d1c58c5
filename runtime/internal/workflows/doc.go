// Package workflows is the machine behind runtime's typed workflows
// (Step, Then, Gather): the untyped step graph of a submission and its
// checks (CheckGraph), the Runner that submits a workflow and makes the
// jobs of its steps as they become ready, fails a step that cannot be
// made, cancels and retries workflows, the Sink that advances a workflow
// when a worker ends a step's job, and the Keeper that finishes what a
// dead process left half-advanced and prunes the list of workflows.
//
// # What it owns, and what it must not know
//
// It owns the order of the calls around a workflow's record, each harmless
// when made twice, so that a process killed between any two of them leaves
// nothing the keeper cannot finish: a step's job is made only under the id
// fixed at submission, a step's end is read back from its job's result
// record, and a retry gives a step a second job only when its first can
// run no more.
//
// It knows the record's vocabulary (package record), package queue's job
// ends and job reads, result records (package results), the engine's job
// ends and the scheduler's outage log. It must not know task types, codecs
// or the typed API: making a step's job from its template is the runtime's
// Make function, checking a submitted step's task, args and types is
// CheckGraph's check function, and a step's args and result are opaque
// bytes here — sealed or not: opening a step's args and sealing them for
// its job is the runtime's (Maker.OpenArgs, Maker.PackArgs), as is turning
// a step's job's result into the value its record keeps (Runner.StepResult). It reaches Redis only through Store. Its tests run in memory,
// without Redis, in seconds (go test ./runtime/internal/workflows), against
// storetest.Store, which runtime's TestWorkflowStore_ holds to what the
// Redis scripts answer; runtime's workflow tests run the whole against real
// servers, a Redis Cluster among them.
//
// # Where the Redis side lives, and why
//
// Beside the machine, in the same owner: package redisstore holds a
// workflow's record, its Lua scripts (redisstore/scripts/wf_*.lua and
// their shared _workflow.lua) and the Go that runs them (redisstore.Store,
// the Store of a program), with tests of its own against real servers.
// Each wf_*.lua is one atomic step of the record, assembled — as every
// script of the module is — by package queue's one loader (queue.LoadLua)
// from the shared Lua it names: _workflow.lua's steps and the argument and
// key-type checks of queue's _checks.lua. The scripts run on the Queue's
// client and are given every key through KEYS; the keys are named by
// package queue (queue.WorkflowKey, WorkflowIndex, WorkflowList,
// WorkflowChannel), beside the routes' keys that the same Redis holds, so
// one file lists every key of a namespace. A step's job lives on its
// route's slot and the record on its own, so no script ends a job and
// advances its workflow at once: the machine here orders the calls
// instead, and the keeper covers every cut between them.
//
// Package record is the vocabulary that the machine, both stores and the
// runtime and admin code share. It is a package apart because storetest,
// which the machine's own tests import, cannot import the machine.
package workflows
