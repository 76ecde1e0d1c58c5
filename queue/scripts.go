package queue

import (
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// scripts holds one Lua script per state transition, each prefixed with the
// shared checks of scripts/_prelude.lua.
type scripts struct {
	enqueue, push, fetch, claim, ack, fail, requeue, handback, renew, reap, promote, replay, purge, cron *redis.Script

	wake *redis.Script // WakeWaiters (idle.go)

	// admin actions (admin.go)
	pause, resume, remove, canceled, cancels *redis.Script

	stored, shed *redis.Script // the ended list of the task history (ended.go)

	sweep *redis.Script // SweepFlows (flow.go)

	progress *redis.Script // WriteProgress (progress.go)

	// workflows (workflow.go)
	wfSubmit, wfAdvance, wfCreated, wfCancel, wfRetry, wfDue *redis.Script

	list   *redis.Script // read-only: ListJobs (list.lua)
	prune  *redis.Script // read-only: PruneRoutes (prune.lua)
	lookup *redis.Script // read-only: Lookup, Result (lookup.lua)
}

func loadScripts() *scripts {
	prelude := mustRead("_checks.lua") + "\n" + mustRead("_prelude.lua") + "\n" + mustRead("_flow.lua")
	load := func(name string) *redis.Script {
		return redis.NewScript(prelude + "\n" + mustRead(name+".lua"))
	}
	wf := func(name string) *redis.Script {
		return redis.NewScript(mustRead("_checks.lua") + "\n" + mustRead("_workflow.lua") + "\n" + mustRead(name+".lua"))
	}
	return &scripts{
		wfSubmit:  wf("wf_submit"),
		wfAdvance: wf("wf_advance"),
		wfCreated: wf("wf_created"),
		wfCancel:  wf("wf_cancel"),
		wfRetry:   wf("wf_retry"),
		wfDue:     wf("wf_due"),
		enqueue:   load("enqueue"),
		push:      load("push"),
		fetch:     load("fetch"),
		claim:     load("claim"),
		ack:       load("ack"),
		fail:      load("fail"),
		requeue:   load("requeue"),
		handback:  load("handback"),
		renew:     load("renew"),
		reap:      load("reap"),
		promote:   load("promote"),
		replay:    load("replay"),
		purge:     load("purge"),
		cron:      load("cron"),
		wake:      load("wake"),
		list:      load("list"),
		prune:     load("prune"),
		lookup:    load("lookup"),
		pause:     load("pause"),
		resume:    load("resume"),
		remove:    load("remove"),
		canceled:  load("canceled"),
		cancels:   load("cancels"),
		stored:    load("stored"),
		shed:      load("shed"),
		sweep:     load("sweep"),
		progress:  load("progress"),
	}
}

func mustRead(name string) string {
	b, err := scriptFS.ReadFile("scripts/" + name)
	if err != nil {
		panic(fmt.Sprintf("queue: embedded script %s: %v", name, err))
	}
	return string(b)
}
