package queue

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// sharedLuaFiles hold the Lua definitions the scripts share, in the order
// they are emitted: a definition only names what an earlier one (or a
// forward declaration) defines.
var sharedLuaFiles = []string{"_checks.lua", "_prelude.lua", "_flow.lua", "_unique.lua"}

// Lua is a set of Lua scripts, the files of one fs.FS, and the shared Lua
// they draw on: package queue's shared files (_checks.lua, _prelude.lua,
// _flow.lua, _unique.lua, in that order), then the set's own shared files. Each script
// is loaded with exactly the shared definitions it names, directly or
// through other shared definitions, in that order (see scripts.go for the
// shapes a shared file may hold). Package queue's scripts are one such
// set; a package that owns other records (the workflows') embeds its
// scripts and loads them with LoadLua, so every script, wherever it lives,
// is assembled by this one loader.
type Lua struct {
	fsys fs.FS
	defs []luaDef
}

// LoadLua reads the shared files named shared from fsys, after package
// queue's own, and returns the set of fsys's scripts. An error names the
// file and line of a construct the assembler does not understand, of a
// definition that names a shared local defined after it, or a shared file
// that is missing or named twice (queue's own included).
func LoadLua(fsys fs.FS, shared ...string) (*Lua, error) {
	text := map[string]string{}
	read := func(fsys fs.FS, name string) error {
		if _, dup := text[name]; dup {
			return fmt.Errorf("shared Lua file %s is named twice (package queue's own are %s)", name, strings.Join(sharedLuaFiles, ", "))
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("shared Lua: %w", err)
		}
		text[name] = string(b)
		return nil
	}
	for _, name := range sharedLuaFiles {
		if err := read(queueScripts, name); err != nil {
			return nil, err
		}
	}
	for _, name := range shared {
		if err := read(fsys, name); err != nil {
			return nil, err
		}
	}
	files := append(slices.Clip(sharedLuaFiles), shared...)
	defs, err := parseSharedLua(files, func(name string) string { return text[name] })
	if err != nil {
		return nil, err
	}
	return &Lua{fsys: fsys, defs: defs}, nil
}

// Source is the assembled source of the script <name>.lua of the set.
func (l *Lua) Source(name string) (string, error) {
	b, err := fs.ReadFile(l.fsys, name+".lua")
	if err != nil {
		return "", fmt.Errorf("Lua script %s: %w", name, err)
	}
	return assembleLua(l.defs, string(b)), nil
}

// Script is the script <name>.lua of the set, assembled. It panics when
// the file is missing: the scripts are embedded, so a missing one is a
// mistake of the build, which the set's tests (loading every script) catch.
func (l *Lua) Script(name string) *redis.Script {
	src, err := l.Source(name)
	if err != nil {
		panic(err)
	}
	return redis.NewScript(src)
}

// luaDef is one top-level definition of a shared file: a local function, a
// one-line local, a forward declaration (local name) or the assignment that
// completes one (name = function(...) ... end).
type luaDef struct {
	name string   // the local it declares or assigns
	at   string   // file:line, for errors
	text string   // its source, with the comment lines right above it
	uses []string // the other shared names its code names
}

var (
	luaFuncRE   = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	luaAssignRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*) = function\(`)
	luaLocalRE  = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*)(?: = (.+))?$`)
	luaIdentRE  = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// parseSharedLua splits the shared files into their definitions. It knows
// exactly the shapes the files use and refuses anything else, so a construct
// it would misread (a one-line function, a multi-line table, a block
// comment, code at the top level) fails loading instead of dropping code a
// script needs.
func parseSharedLua(files []string, read func(string) string) ([]luaDef, error) {
	var defs []luaDef
	declared := map[string]string{} // forward declarations not yet assigned, and where
	defined := map[string]bool{}
	for _, file := range files {
		lines := strings.Split(read(file), "\n")
		var doc []string // comment lines right above the next definition
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			at := fmt.Sprintf("%s:%d", file, i+1)
			switch {
			case strings.TrimSpace(line) == "":
				doc = nil
				continue
			case strings.HasPrefix(line, "--[") && luaLongBracket(line[2:]):
				return nil, fmt.Errorf("%s: block comment at the top level: use -- lines", at)
			case strings.HasPrefix(line, "--"):
				doc = append(doc, line)
				continue
			}
			var name string
			body := []string{line}
			if m := luaFuncRE.FindStringSubmatch(line); m != nil {
				name = m[1]
			} else if m := luaAssignRE.FindStringSubmatch(line); m != nil {
				name = m[1]
				if declared[name] == "" {
					return nil, fmt.Errorf("%s: %s assigned without an earlier forward declaration (local %s)", at, name, name)
				}
				delete(declared, name)
			}
			if name != "" {
				var err error
				if body, i, err = luaFunctionBody(file, lines, i, name); err != nil {
					return nil, err
				}
			} else if m := luaLocalRE.FindStringSubmatch(line); m != nil {
				name = m[1]
				if m[2] == "" {
					declared[name] = at
				} else if !luaBalanced(m[2]) {
					return nil, fmt.Errorf("%s: local %s does not end on its line: keep a shared local on one line", at, name)
				}
			} else {
				return nil, fmt.Errorf("%s: top-level construct the script assembler does not understand: %q", at, line)
			}
			if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" &&
				(lines[i+1][0] == ' ' || lines[i+1][0] == '\t') {
				return nil, fmt.Errorf("%s:%d: indented line after the definition of %s", file, i+2, name)
			}
			if defined[name] && !luaAssignRE.MatchString(line) {
				return nil, fmt.Errorf("%s: %s is defined twice", at, name)
			}
			defined[name] = true
			defs = append(defs, luaDef{name: name, at: at, text: strings.Join(append(doc, body...), "\n")})
			doc = nil
		}
	}
	for name, at := range declared {
		return nil, fmt.Errorf("%s: forward declaration local %s is never assigned", at, name)
	}
	if err := linkLuaUses(defs, defined); err != nil {
		return nil, err
	}
	return defs, nil
}

// luaFunctionBody returns the lines of the function whose first line is
// lines[at] (that line included) and the index of its last line: a function
// runs to the first line "end" at column 0, and every line before it is
// indented or blank.
func luaFunctionBody(file string, lines []string, at int, name string) ([]string, int, error) {
	body := []string{lines[at]}
	for i := at + 1; i < len(lines); i++ {
		l := lines[i]
		body = append(body, l)
		if l == "end" {
			return body, i, nil
		}
		if l != "" && l[0] != ' ' && l[0] != '\t' {
			return nil, 0, fmt.Errorf("%s:%d: unindented line inside function %s: %q", file, i+1, name, l)
		}
	}
	return nil, 0, fmt.Errorf("%s:%d: function %s has no closing end at column 0", file, at+1, name)
}

// linkLuaUses fills each definition's uses with the shared names its text
// names. Each definition may name only what is defined before it: a Lua
// local is in scope only after its declaration.
func linkLuaUses(defs []luaDef, defined map[string]bool) error {
	seen := map[string]bool{}
	for k := range defs {
		d := &defs[k]
		for _, id := range luaNames(d.text) {
			if id == d.name || !defined[id] {
				continue
			}
			if !seen[id] {
				return fmt.Errorf("%s: %s names %s, which is defined only after it", d.at, d.name, id)
			}
			d.uses = append(d.uses, id)
		}
		seen[d.name] = true
	}
	return nil
}

// luaLongBracket reports whether s opens a Lua long bracket: [[ or [=...[.
func luaLongBracket(s string) bool {
	s = strings.TrimPrefix(s, "[")
	s = strings.TrimLeft(s, "=")
	return strings.HasPrefix(s, "[")
}

// luaBalanced reports whether the brackets of one line's expression close on
// that line.
func luaBalanced(s string) bool {
	n := 0
	for _, c := range luaCode(s) {
		switch c {
		case '{', '(', '[':
			n++
		case '}', ')', ']':
			n--
		}
	}
	return n == 0
}

// luaCode drops the -- comment of each line of src.
func luaCode(src string) string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "--"); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}

// luaNames lists, once each in order of first appearance, the identifiers
// the code of src names (comments left out).
func luaNames(src string) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range luaIdentRE.FindAllString(luaCode(src), -1) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// queueLua is the set of package queue's own scripts.
var queueLua = sync.OnceValues(func() (*Lua, error) { return LoadLua(queueScripts) })

// sharedLua is the definitions of package queue's shared files.
func sharedLua() ([]luaDef, error) {
	l, err := queueLua()
	if err != nil {
		return nil, err
	}
	return l.defs, nil
}

// assembleLua returns the source of scripts/<name>.lua preceded by exactly
// the shared definitions it needs: those it names, and, transitively, those
// they name, in the shared files' order.
func assembleLua(defs []luaDef, body string) string {
	index := map[string][]int{}
	for i, d := range defs {
		index[d.name] = append(index[d.name], i)
	}
	need := map[string]bool{}
	var visit func(string)
	visit = func(name string) {
		if need[name] {
			return
		}
		need[name] = true
		for _, i := range index[name] {
			for _, u := range defs[i].uses {
				visit(u)
			}
		}
	}
	for _, id := range luaNames(body) {
		if _, ok := index[id]; ok {
			visit(id)
		}
	}
	var b strings.Builder
	for _, d := range defs {
		if need[d.name] {
			b.WriteString(d.text)
			b.WriteString("\n\n")
		}
	}
	b.WriteString(body)
	return b.String()
}

// scriptSource is the assembled source of scripts/<name>.lua.
func scriptSource(name string) string {
	l, err := queueLua()
	if err != nil {
		panic("queue: shared Lua: " + err.Error())
	}
	src, err := l.Source(name)
	if err != nil {
		panic("queue: " + err.Error())
	}
	return src
}

// newScript loads scripts/<name>.lua with the shared definitions it needs.
func newScript(name string) *redis.Script {
	return redis.NewScript(scriptSource(name))
}
