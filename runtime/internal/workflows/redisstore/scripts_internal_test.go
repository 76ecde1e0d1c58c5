package redisstore

import (
	"context"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
)

var (
	sharedRefRE = regexp.MustCompile(`\b(?:bn|wf)_[A-Za-z0-9_]+\b`)
	definedRE   = regexp.MustCompile(`(?m)^local (?:function )?((?:bn|wf)_[A-Za-z0-9_]+)|^((?:bn|wf)_[A-Za-z0-9_]+) = function\(`)
	commentRE   = regexp.MustCompile(`--[^\n]*`)
)

// Every workflow script, assembled by queue's loader, loads on both
// servers (the embedded one's gopher-lua and Redis's Lua), defines every
// shared name it uses before its first use, and carries no shared
// definition that nothing in it uses.
func TestScripts_LoadWithExactlyTheSharedDefinitionsTheyUse(t *testing.T) {
	l, err := loadLua()
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(scriptFS, "scripts/wf_*.lua")
	if err != nil || len(files) != 8 {
		t.Fatalf("scripts: %v, %v; want the eight wf_*.lua", files, err)
	}
	srcs := map[string]string{}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "scripts/"), ".lua")
		src, err := l.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		srcs[name] = src
		code := commentRE.ReplaceAllString(src, "")
		at, defs := map[string]int{}, map[string]int{}
		for _, m := range definedRE.FindAllStringSubmatchIndex(code, -1) {
			var n string
			if m[2] >= 0 {
				n = code[m[2]:m[3]]
			} else {
				n = code[m[4]:m[5]]
			}
			defs[n]++
			if _, ok := at[n]; !ok {
				at[n] = m[0]
			}
		}
		uses := map[string]int{}
		for _, loc := range sharedRefRE.FindAllStringIndex(code, -1) {
			ref := code[loc[0]:loc[1]]
			uses[ref]++
			if d, ok := at[ref]; !ok || loc[0] < d {
				t.Errorf("%s.lua uses %s, which its loaded source does not define before", name, ref)
			}
		}
		for n, k := range defs {
			if uses[n] <= k {
				t.Errorf("%s.lua carries %s, which nothing in it uses", name, n)
			}
		}
	}
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		for name, src := range srcs {
			if _, err := rdb.ScriptLoad(context.Background(), src).Result(); err != nil {
				t.Errorf("%s.lua does not load: %v", name, err)
			}
		}
	})
}
