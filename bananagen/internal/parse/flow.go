package parse

import (
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/bananagen/internal/model"
	"github.com/bananas-go/bananas/queue"
)

// Flow control keys of //bananas:task: key= (a path into the args, resolved
// once the args type is known: resolveKey), max_running=, rate= and burst=,
// checked by the queue's own rules (queue.ParseRate, queue.LimitMax) so that
// the generator accepts exactly what a worker stores.

// checkFlowKey validates one flow control key=value and stores it in t.
func checkFlowKey(t *model.Task, kind string, kv keyValue, bad func(token.Pos, string, ...any)) bool {
	if kind == "cron" {
		bad(kv.pos, "%s is only a //bananas:task key", kv.key)
		return false
	}
	count := func() (int, bool) {
		n, err := strconv.Atoi(kv.value)
		if err != nil || n < 1 || n > queue.LimitMax || strconv.Itoa(n) != kv.value {
			bad(kv.valuePos, "%s=%s is not a whole number from 1 to %d", kv.key, kv.value, queue.LimitMax)
			return 0, false
		}
		return n, true
	}
	ok := true
	switch kv.key {
	case "key":
		if !validPath(kv.value) {
			bad(kv.valuePos, "key=%s is not a path of fields such as key=CustomerID or key=Order.Shop", kv.value)
			return false
		}
		t.Key = &model.Key{Path: kv.value}
	case "max_running":
		t.MaxRunning, ok = count()
	case "rate":
		if _, _, err := queue.ParseRate(kv.value); err != nil {
			bad(kv.valuePos, "rate=%s is not N/s, N/m or N/h with N a whole number from 1 to %d (e.g. rate=100/s)", kv.value, queue.LimitMax)
			return false
		}
		t.Rate = kv.value
	case "burst":
		t.Burst, ok = count()
	case "on_busy":
		switch kv.value {
		case "wait", "cancel_running", "drop":
			t.OnBusy = kv.value
		default:
			bad(kv.valuePos, "on_busy=%s is not a policy: use wait, cancel_running or drop", kv.value)
			return false
		}
	}
	return ok
}

// validPath reports whether s is dot-separated Go identifiers.
func validPath(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if !token.IsIdentifier(part) {
			return false
		}
	}
	return true
}

// checkFlow checks what the flow control keys of d need of each other and
// of the function's args (sig), once every key is read; t holds the keys.
func checkFlow(p *types.Package, fn string, sig *types.Signature, d *directive, t *model.Task, bad func(token.Pos, string, ...any)) {
	for _, kv := range d.keys {
		switch {
		case kv.key == "on_busy" && t.OnBusy != "" && (t.MaxRunning == 0 || t.Key == nil):
			bad(kv.pos, "on_busy needs key and max_running: a key is busy when max_running of its jobs run or wait (e.g. key=UserID max_running=1 on_busy=%s)", kv.value)
		case kv.key == "burst" && t.Burst > 0 && t.Rate == "":
			bad(kv.pos, "burst needs rate: burst=%s is how many of the rate may start back to back (e.g. rate=100/s burst=%s)", kv.value, kv.value)
		case kv.key == "key" && t.Key != nil:
			params := sig.Params()
			switch {
			case params.Len() == 1 && isContext(params.At(0).Type()):
				bad(kv.pos, "key needs a task with args: %s takes none to read a key from", fn)
				t.Key = nil
			case params.Len() == 2:
				if !resolveKey(p, keyedArgs(t, params.At(1).Type()), kv, t.Key, bad) {
					t.Key = nil
				}
			}
		}
	}
}

// resolveKey follows key's path through the args type at, filling key, or
// says what is wrong: each hop an exported field of a struct (or of a
// pointer to one), the leaf a string, bool or integer.
func resolveKey(p *types.Package, at types.Type, kv keyValue, key *model.Key, bad func(token.Pos, string, ...any)) bool {
	qual := types.RelativeTo(p)
	cur := at
	if ptr, ok := cur.Underlying().(*types.Pointer); ok {
		cur, key.ArgsPointer = ptr.Elem(), true
	}
	names := strings.Split(key.Path, ".")
	for i, name := range names {
		st, ok := cur.Underlying().(*types.Struct)
		if !ok && i == 0 {
			bad(kv.valuePos, "key=%s: the args are of type %s, not a struct (or a pointer to one) with a field %s", key.Path, types.TypeString(at, qual), name)
			return false
		}
		if !ok {
			bad(kv.valuePos, "key=%s: field %s is of type %s, not a struct (or a pointer to one) with a field %s", key.Path, strings.Join(names[:i], "."), types.TypeString(cur, qual), name)
			return false
		}
		f := directField(st, name)
		if f == nil {
			bad(kv.valuePos, "key=%s: %s", key.Path, noField(cur, name, qual))
			return false
		}
		if !f.Exported() {
			bad(kv.valuePos, "key=%s: field %s of %s is not exported: msgpack does not carry it", key.Path, name, types.TypeString(cur, qual))
			return false
		}
		ft := f.Type()
		if i == len(names)-1 {
			return keyLeaf(ft, kv, key, qual, bad)
		}
		hop := model.KeyHop{Name: name}
		if ptr, ok := ft.Underlying().(*types.Pointer); ok {
			ft, hop.Pointer = ptr.Elem(), true
		}
		key.Hops = append(key.Hops, hop)
		cur = ft
	}
	return false
}

// directField is the field of st named name, not a promoted one.
func directField(st *types.Struct, name string) *types.Var {
	for i := range st.NumFields() {
		if f := st.Field(i); f.Name() == name {
			return f
		}
	}
	return nil
}

// noField says that t has no field name, and the path to write when the
// field is promoted from an embedded struct.
func noField(t types.Type, name string, qual types.Qualifier) string {
	obj, index, _ := types.LookupFieldOrMethod(t, true, nil, name)
	if v, ok := obj.(*types.Var); ok && v.IsField() && len(index) > 1 {
		var path []string
		cur := t
		for _, i := range index {
			if ptr, ok := cur.Underlying().(*types.Pointer); ok {
				cur = ptr.Elem()
			}
			f := cur.Underlying().(*types.Struct).Field(i)
			path = append(path, f.Name())
			cur = f.Type()
		}
		return types.TypeString(t, qual) + " has no field " + name + " of its own (it is promoted from an embedded field): write the path " + strings.Join(path, ".")
	}
	return types.TypeString(t, qual) + " has no field " + name
}

// keyLeaf checks the type of a key's last field and stores its kind.
func keyLeaf(ft types.Type, kv keyValue, key *model.Key, qual types.Qualifier, bad func(token.Pos, string, ...any)) bool {
	b, ok := ft.Underlying().(*types.Basic)
	switch {
	case !ok || b.Info()&(types.IsString|types.IsBoolean|types.IsInteger) == 0 || b.Kind() == types.Uintptr:
		bad(kv.valuePos, "key=%s: field %s has type %s: a key is read from a string, bool or integer field (or one of a type defined on them)",
			key.Path, key.Path, types.TypeString(ft, qual))
		return false
	case b.Info()&types.IsString != 0:
		key.Leaf = model.KeyString
		key.Exact = types.Identical(ft, types.Typ[types.String])
	case b.Info()&types.IsBoolean != 0:
		key.Leaf = model.KeyBool
		key.Exact = types.Identical(ft, types.Typ[types.Bool])
	case b.Info()&types.IsUnsigned != 0:
		key.Leaf = model.KeyUint
		key.Exact = types.Identical(ft, types.Typ[types.Uint64])
	default:
		key.Leaf = model.KeyInt
		key.Exact = types.Identical(ft, types.Typ[types.Int64])
	}
	key.Hops = append(key.Hops, model.KeyHop{Name: kv.value[strings.LastIndex(kv.value, ".")+1:]})
	return true
}
