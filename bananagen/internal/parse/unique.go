package parse

import (
	"go/token"
	"go/types"
	"strings"
	"time"

	"github.com/bananas-go/bananas/bananagen/internal/model"
	"github.com/bananas-go/bananas/queue"
)

// Unique keys of //bananas:task beyond unique=: unique_by= (fields of the
// args the key is made of, resolved once the args type is known),
// unique_until= (started, completed or ended) and debounce= (a duration),
// each of which needs unique=.

// uniqueKeys are the keys checkUniqueKey reads.
var uniqueKeys = map[string]bool{"unique_by": true, "unique_until": true, "debounce": true}

// checkUniqueKey validates one of uniqueKeys and stores it in t.
func checkUniqueKey(t *model.Task, kind string, kv keyValue, bad func(token.Pos, string, ...any)) bool {
	if kind == "cron" {
		bad(kv.pos, "%s is not a //bananas:cron key: a cron entry fires once per tick already", kv.key)
		return false
	}
	switch kv.key {
	case "unique_by":
		for _, p := range strings.Split(kv.value, ",") {
			if !validPath(p) {
				bad(kv.valuePos, "unique_by=%s is not a comma-separated list of fields such as unique_by=To,Subject or unique_by=Order.ID", kv.value)
				return false
			}
		}
		t.UniqueBy = strings.Split(kv.value, ",")
	case "unique_until":
		u, err := queue.ParseUntil(kv.value)
		if err != nil || kv.value == "" {
			bad(kv.valuePos, "unique_until=%s is not a point of a job's life: use started, completed or ended", kv.value)
			return false
		}
		t.UniqueUntil = string(u)
	case "debounce":
		d, err := time.ParseDuration(kv.value)
		if err != nil || d <= 0 {
			bad(kv.valuePos, "debounce=%s is not a positive Go duration (e.g. 5s, 1m)", kv.value)
			return false
		}
		t.Debounce = d
	}
	return true
}

// checkUnique checks, once every key is read, that the keys needing a
// unique key have one, and resolves unique_by's fields in the args of sig.
func checkUnique(p *types.Package, fn string, sig *types.Signature, d *directive, t *model.Task, bad func(token.Pos, string, ...any)) {
	if d.kind == "cron" { // checkUniqueKey refused the keys already
		return
	}
	for _, kv := range d.keys {
		if !uniqueKeys[kv.key] {
			continue
		}
		if t.Unique == 0 {
			what := map[string]string{
				"unique_by":    "the fields its key is made of",
				"unique_until": "until when its key is held",
				"debounce":     "that an enqueue while the key's job waits replaces it",
			}[kv.key]
			bad(kv.pos, "%s needs a unique key: add unique=<ttl> (e.g. unique=1h); %s=%s says %s", kv.key, kv.key, kv.value, what)
			continue
		}
		if kv.key != "unique_by" || t.UniqueBy == nil {
			continue
		}
		params := sig.Params()
		if params.Len() < 2 {
			bad(kv.pos, "unique_by needs a task with args: %s takes none to read fields from", fn)
			continue
		}
		for _, path := range t.UniqueBy {
			if why := fieldPathError(p, params.At(1).Type(), path); why != "" {
				bad(kv.valuePos, "unique_by=%s: %s", kv.value, why)
			}
		}
	}
}

// fieldPathError says why path names no exported field of at (through
// structs, pointers to structs, and maps with string keys, whose keys are
// not known until run time), or "".
func fieldPathError(p *types.Package, at types.Type, path string) string {
	qual := types.RelativeTo(p)
	cur := at
	names := strings.Split(path, ".")
	for i, name := range names {
		if ptr, ok := cur.Underlying().(*types.Pointer); ok {
			cur = ptr.Elem()
		}
		if m, ok := cur.Underlying().(*types.Map); ok {
			if b, ok := m.Key().Underlying().(*types.Basic); ok && b.Info()&types.IsString != 0 {
				return "" // a map's keys are the job's: read at run time
			}
			return "field " + strings.Join(names[:i], ".") + " is a map without string keys (" + types.TypeString(cur, qual) + ")"
		}
		if _, ok := cur.Underlying().(*types.Struct); !ok {
			where := "the args are"
			if i > 0 {
				where = "field " + strings.Join(names[:i], ".") + " is"
			}
			return where + " of type " + types.TypeString(cur, qual) + ", not a struct with a field " + name
		}
		obj, _, _ := types.LookupFieldOrMethod(cur, true, p, name)
		f, ok := obj.(*types.Var)
		if !ok || !f.IsField() {
			return types.TypeString(cur, qual) + " has no field " + name
		}
		if !f.Exported() {
			return "field " + name + " of " + types.TypeString(cur, qual) + " is not exported: msgpack does not carry it"
		}
		cur = f.Type()
	}
	return ""
}
