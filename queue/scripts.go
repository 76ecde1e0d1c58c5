package queue

import (
	"embed"
	"fmt"
	"io/fs"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// queueScripts is scripts/, the files of package queue's Lua set.
var queueScripts = func() fs.FS {
	sub, err := fs.Sub(scriptFS, "scripts")
	if err != nil {
		panic(err)
	}
	return sub
}()

// scripts holds one Lua script per state transition (newScript).
//
// The shared Lua — scripts/_checks.lua, _prelude.lua, _flow.lua and _unique.lua, in
// that order — is a library, not a prelude: each script is
// loaded with only the shared definitions it names, directly or through
// other shared definitions (the transitive closure), emitted in the shared
// files' order so that each local is defined before its use (assemble.go).
// A script thus stays small, far from Lua's limits of 200 locals and 60
// upvalues a function, and costs Redis only the bytes it runs.
//
// For that the shared files hold only top-level definitions of these
// shapes, each name defined once: "local function name(" whose body is
// indented and ends at a line "end" at column 0; "local name = ..." on one
// line; "local name" forward-declared and later completed by
// "name = function(" ... "end". Comment lines right above a definition go
// with it; other comments and blank lines are dropped. Loading refuses any
// other top-level construct, and any definition that names a shared local
// defined after it.
//
// Another package's scripts (the workflows') are a set of their own
// (LoadLua): they draw on these shared files, then on their own, which
// follow the same rules.
type scripts struct {
	enqueue, push, fetch, claim, ack, fail, requeue, handback, renew, reap, promote, replay, purge, cron *redis.Script

	pushUnique *redis.Script // light jobs with unique keys (enqueue_plain.go)

	started *redis.Script // frees a unique key held until its job started (fetch.go)

	wake *redis.Script // WakeWaiters (idle.go)

	// admin actions (admin.go)
	pause, resume, remove, canceled, cancels *redis.Script

	stored, shed *redis.Script // the ended list of the task history (ended.go)

	sweep *redis.Script // Flows.Sweep (flow.go)

	progress *redis.Script // WriteProgress (progress.go)

	list   *redis.Script // read-only: ListJobs (list.lua)
	prune  *redis.Script // read-only: PruneRoutes (prune.lua)
	lookup *redis.Script // read-only: Lookup, Result (lookup.lua)

	expire *redis.Script // EndExpired, ExpireDue (expire.go)
}

func loadScripts() *scripts {
	return &scripts{
		enqueue:    newScript("enqueue"),
		push:       newScript("push"),
		pushUnique: newScript("push_unique"),
		fetch:      newScript("fetch"),
		claim:      newScript("claim"),
		ack:        newScript("ack"),
		fail:       newScript("fail"),
		requeue:    newScript("requeue"),
		handback:   newScript("handback"),
		renew:      newScript("renew"),
		reap:       newScript("reap"),
		promote:    newScript("promote"),
		replay:     newScript("replay"),
		purge:      newScript("purge"),
		cron:       newScript("cron"),
		wake:       newScript("wake"),
		list:       newScript("list"),
		prune:      newScript("prune"),
		lookup:     newScript("lookup"),
		pause:      newScript("pause"),
		resume:     newScript("resume"),
		remove:     newScript("remove"),
		canceled:   newScript("canceled"),
		cancels:    newScript("cancels"),
		stored:     newScript("stored"),
		shed:       newScript("shed"),
		sweep:      newScript("sweep"),
		progress:   newScript("progress"),
		started:    newScript("started"),
		expire:     newScript("expire"),
	}
}

func mustRead(name string) string {
	b, err := scriptFS.ReadFile("scripts/" + name)
	if err != nil {
		panic(fmt.Sprintf("queue: embedded script %s: %v", name, err))
	}
	return string(b)
}
