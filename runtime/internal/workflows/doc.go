// Package workflows moves workflows on: it submits a workflow's record and
// makes the jobs of its first steps, advances a workflow when one of its
// steps' jobs ends and makes the jobs of the steps that may then start,
// cancels and retries workflows, and keeps watch (Keeper) over the
// workflows a dead process left half-advanced and over the list of
// workflows, whose entries of expired records it drops.
//
// # What it owns, and what it must not know
//
// It owns the order of the calls around a workflow's record (package
// queue's workflow scripts), each harmless when made twice, so that a
// process killed between any two of them leaves nothing the keeper cannot
// finish: a step's job is made only under the id fixed at submission, and a
// step's end is read back from its job's result record.
//
// It knows package queue, result records (package results) and the
// scheduler's outage log. It must not
// know task types, codecs or the typed API: making a step's job from its
// template is the runtime's Make function, and a step's args and result are
// opaque bytes here.
package workflows
