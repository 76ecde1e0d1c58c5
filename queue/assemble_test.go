package queue

import (
	"context"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
)

// scriptNames lists every script of scripts/ (the shared files left out).
func scriptNames(t *testing.T) []string {
	t.Helper()
	files, err := fs.Glob(scriptFS, "scripts/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "scripts/"), ".lua")
		if !strings.HasPrefix(name, "_") {
			out = append(out, name)
		}
	}
	if len(out) < 30 {
		t.Fatalf("found only %d scripts: %v", len(out), out)
	}
	return out
}

// The parser of the shared files understands every line of them: each
// top-level local of the files is one definition it returns, and it refuses,
// naming the line, each shape it does not know rather than misreading it.
func TestSharedLua_ParserUnderstandsTheSharedFilesAndRefusesTheRest(t *testing.T) {
	defs, err := sharedLua()
	if err != nil {
		t.Fatalf("the shared Lua files hold a construct the assembler does not understand: %v", err)
	}
	got := map[string]bool{}
	for _, d := range defs {
		got[d.name] = true
	}
	top := regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)
	want := 0
	for _, f := range sharedLuaFiles {
		for _, m := range top.FindAllStringSubmatch(mustRead(f), -1) {
			want++
			if !got[m[1]] {
				t.Errorf("%s: top-level local %s is no definition of the parser", f, m[1])
			}
		}
	}
	if len(got) != want || len(got) < 50 {
		t.Errorf("parser found %d names, the files declare %d", len(got), want)
	}

	bad := map[string]string{
		"one-line function":        "local function bn_a() return 1 end\n\nlocal function bn_b()\n  return 2\nend\n",
		"multi-line table":         "local bn_t = {\n  a = 1,\n}\n",
		"block comment":            "--[[ a\nb ]]\nlocal bn_x = 1\n",
		"level block comment":      "--[==[ a ]==]\nlocal bn_x = 1\n",
		"top-level statement":      "local bn_x = 1\nbn_x = 2\n",
		"top-level call":           "redis.call('DEL', KEYS[1])\n",
		"global function":          "function bn_g()\nend\n",
		"no closing end":           "local function bn_a()\n  return 1\n",
		"unindented body":          "local function bn_a()\nreturn 1\nend\n",
		"end not at column 0":      "local function bn_a()\n  return 1\n  end\n",
		"assignment without local": "bn_f = function()\nend\n",
		"declaration never set":    "local bn_f\n",
		"defined twice":            "local bn_x = 1\nlocal bn_x = 2\n",
		"used before defined":      "local function bn_a()\n  return bn_b()\nend\nlocal function bn_b()\n  return 1\nend\n",
		"multiple locals":          "local bn_x, bn_y = 1, 2\n",
	}
	for what, src := range bad {
		_, err := parseSharedLua([]string{"bad.lua"}, func(string) string { return src })
		if err == nil {
			t.Errorf("%s: parsed without an error:\n%s", what, src)
		} else if !strings.Contains(err.Error(), "bad.lua") {
			t.Errorf("%s: error %q does not name the file and line", what, err)
		}
	}
}

var (
	luaSharedRefRE = regexp.MustCompile(`\b(?:bn|wf)_[A-Za-z0-9_]+\b`)
	luaDefLineRE   = regexp.MustCompile(`(?m)^\s*local (?:function )?([A-Za-z_][A-Za-z0-9_]*)|^([A-Za-z_][A-Za-z0-9_]*) = function\(`)
)

// luaDefinedAt maps each local a source defines (a local function, a local,
// or a function assigned at column 0) to the offset of its first definition.
func luaDefinedAt(code string) map[string]int {
	at := map[string]int{}
	for _, m := range luaDefLineRE.FindAllStringSubmatchIndex(code, -1) {
		name := ""
		if m[2] >= 0 {
			name = code[m[2]:m[3]]
		} else {
			name = code[m[4]:m[5]]
		}
		if _, ok := at[name]; !ok {
			at[name] = m[0]
		}
	}
	return at
}

// Every bn_ and wf_ name a loaded script uses is defined in it, before the
// first use: no script calls a shared function it was not given.
func TestScripts_CarryEverySharedFunctionTheyName(t *testing.T) {
	for _, name := range scriptNames(t) {
		code := luaCode(scriptSource(name))
		defined := luaDefinedAt(code)
		for _, loc := range luaSharedRefRE.FindAllStringIndex(code, -1) {
			ref := code[loc[0]:loc[1]]
			at, ok := defined[ref]
			if !ok {
				t.Errorf("%s.lua uses %s, which its loaded source does not define", name, ref)
			} else if loc[0] < at {
				t.Errorf("%s.lua uses %s before its loaded source defines it", name, ref)
			}
		}
	}
}

// A loaded script carries no shared definition it does not use, directly or
// through another one it carries: pause.lua, which checks one number, gets
// a small fraction of the shared files.
func TestScripts_CarryNoSharedDefinitionTheyDoNotUse(t *testing.T) {
	defs, err := sharedLua()
	if err != nil {
		t.Fatal(err)
	}
	shared := map[string]bool{}
	for _, d := range defs {
		shared[d.name] = true
	}
	full := 0
	for _, f := range sharedLuaFiles {
		full += len(mustRead(f))
	}
	total := 0
	for _, name := range scriptNames(t) {
		src := scriptSource(name)
		total += len(src)
		code := luaCode(src)
		defLines := map[string]int{}
		for _, m := range luaDefLineRE.FindAllStringSubmatch(code, -1) {
			defLines[m[1]+m[2]]++
		}
		uses := map[string]int{}
		for _, id := range luaIdentRE.FindAllString(code, -1) {
			uses[id]++
		}
		var unused []string
		for n, k := range defLines {
			if shared[n] && uses[n] <= k {
				unused = append(unused, n)
			}
		}
		sort.Strings(unused)
		if len(unused) > 0 {
			t.Errorf("%s.lua carries shared definitions nothing in it uses: %v", name, unused)
		}
	}
	pause := scriptSource("pause")
	if len(pause) >= full/10 {
		t.Errorf("pause.lua loads as %d bytes, the shared files are %d: it carries more than it uses", len(pause), full)
	}
	t.Logf("%d bytes of all loaded scripts; pause.lua %d; the shared files %d", total, len(pause), full)
}

// Every loaded script compiles on both servers: the embedded one's
// gopher-lua and Redis's Lua (each limits a function to 200 locals and 60
// upvalues).
func TestScripts_LoadOnEveryBackend(t *testing.T) {
	names := scriptNames(t)
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		for _, name := range names {
			src := scriptSource(name)
			sha, err := rdb.ScriptLoad(ctx, src).Result()
			if err != nil {
				t.Errorf("%s.lua does not load: %v", name, err)
				continue
			}
			if want := redis.NewScript(src).Hash(); sha != want {
				t.Errorf("%s.lua loaded as %s, want %s", name, sha, want)
			}
		}
	})
}

// A script of another package's fs.FS (LoadLua) is assembled by the same
// loader: it gets exactly the shared definitions it names, from its own
// shared files and, through them or directly, from package queue's, in
// that order, and nothing else.
func TestLoadLua_AScriptOfAnotherFSGetsOnlyTheSharedDefinitionsItCalls(t *testing.T) {
	fsys := fstest.MapFS{
		"_mine.lua": {Data: []byte("-- mine_key checks a key.\n" +
			"local function mine_key(key)\n  bn_need_type(key, 'hash', 'record')\n  return key\nend\n\n" +
			"local function mine_unused()\n  return bn_num(ARGV[9], 'x')\nend\n")},
		"mine.lua":  {Data: []byte("-- KEYS[1] a hash\nlocal k = mine_key(KEYS[1])\nreturn bn_str(ARGV[1], 'v')\n")},
		"plain.lua": {Data: []byte("return 1\n")},
	}
	l, err := LoadLua(fsys, "_mine.lua")
	if err != nil {
		t.Fatal(err)
	}
	src, err := l.Source("mine")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := range luaDefinedAt(luaCode(src)) {
		if strings.HasPrefix(name, "bn_") || strings.HasPrefix(name, "mine_") {
			got = append(got, name)
		}
	}
	sort.Strings(got)
	// mine_key names bn_need_type, which names bn_type; the script names
	// bn_str itself.
	if want := "bn_need_type,bn_str,bn_type,mine_key"; strings.Join(got, ",") != want {
		t.Fatalf("mine.lua carries %v, want %s:\n%s", got, want, src)
	}
	if i, j := strings.Index(src, "local function bn_type("), strings.Index(src, "local function mine_key("); i < 0 || j < i {
		t.Fatalf("queue's definitions come after the FS's own:\n%s", src)
	}
	if !strings.Contains(src, "-- mine_key checks a key.") {
		t.Fatalf("the comment above mine_key did not come with it:\n%s", src)
	}
	if src, _ := l.Source("plain"); src != "return 1\n" {
		t.Fatalf("plain.lua, which names nothing shared, loads as %q", src)
	}
	if _, err := l.Source("absent"); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("a missing script: %v; want an error naming it", err)
	}
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		got, err := l.Script("mine").Run(ctx, rdb, []string{redistest.Namespace(t) + ":h"}, "v").Text()
		if err != nil || got != "v" {
			t.Fatalf("mine.lua ran as %q, %v", got, err)
		}
	})
}

// LoadLua refuses, naming the file, another package's shared file it
// cannot read or understand, and one that takes a name of queue's.
func TestLoadLua_RefusesASharedFileItCannotUse(t *testing.T) {
	for what, c := range map[string]struct {
		fsys   fstest.MapFS
		shared string
		want   string
	}{
		"missing":           {fstest.MapFS{}, "_gone.lua", "_gone.lua"},
		"queue's name":      {fstest.MapFS{"_checks.lua": {Data: []byte("local x_a = 1\n")}}, "_checks.lua", "_checks.lua"},
		"top-level call":    {fstest.MapFS{"_bad.lua": {Data: []byte("redis.call('DEL', KEYS[1])\n")}}, "_bad.lua", "_bad.lua:1"},
		"redefines queue's": {fstest.MapFS{"_bad.lua": {Data: []byte("local bn_num = 1\n")}}, "_bad.lua", "_bad.lua:1"},
	} {
		if _, err := LoadLua(c.fsys, c.shared); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: LoadLua = %v; want an error naming %s", what, err, c.want)
		}
	}
}
