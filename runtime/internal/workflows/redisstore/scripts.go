package redisstore

import (
	"embed"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
)

// scriptFS holds one script per transition of a workflow's record, and
// _workflow.lua, the steps of the record they share (scripts/_workflow.lua
// lists the record's fields). Package queue's loader (queue.LoadLua)
// assembles each with exactly the shared definitions it names: of
// _workflow.lua, and of queue's own shared files the argument and
// key-type checks (_checks.lua) every script makes.
//
//go:embed scripts/*.lua
var scriptFS embed.FS

// scripts are the workflow scripts, assembled.
type scripts struct {
	submit, advance, created, cancel, retry, due, fire, signal *redis.Script
}

// sharedFiles are this package's shared Lua, after queue's.
var sharedFiles = []string{"_workflow.lua"}

// loadLua is the set of this package's scripts.
var loadLua = sync.OnceValues(func() (*queue.Lua, error) {
	sub, err := fs.Sub(scriptFS, "scripts")
	if err != nil {
		return nil, err
	}
	return queue.LoadLua(sub, sharedFiles...)
})

// lua is the scripts, assembled once. A shared file the loader refuses is
// a mistake of the build, which TestScripts_ catch: it panics.
var lua = sync.OnceValue(func() *scripts {
	l, err := loadLua()
	if err != nil {
		panic("redisstore: " + err.Error())
	}
	return &scripts{
		submit:  l.Script("wf_submit"),
		advance: l.Script("wf_advance"),
		created: l.Script("wf_created"),
		cancel:  l.Script("wf_cancel"),
		retry:   l.Script("wf_retry"),
		due:     l.Script("wf_due"),
		fire:    l.Script("wf_fire"),
		signal:  l.Script("wf_signal"),
	}
})

// isWrongType: a key of another type than the record's (garbage), which a
// read shows as empty rather than failing.
func isWrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }

// parseMS reads a time in unix ms; the zero time for none or garbage.
func parseMS(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
