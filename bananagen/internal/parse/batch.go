package parse

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/bananas-go/bananas/bananagen/internal/model"
)

// Batch handlers: //bananas:task batch=N linger=D on a function that takes
// a slice of its args. The task's stub is that of a single-job task of the
// slice's element type; the function is registered with
// runtime.HandleBatch, which hands it up to N jobs at once.

// MaxBatch is the largest batch= the generator accepts: a batch holds a
// worker slot per job, and its jobs' leases are renewed together.
const MaxBatch = 10000

// DefaultLinger is the linger of a batch task that gives none.
const DefaultLinger = 100 * time.Millisecond

const acceptedBatch = "func(ctx context.Context, args []A) error, func(ctx context.Context, args []A) []error or func(ctx context.Context, args []A) ([]R, []error)"

// checkBatchKey validates batch= and linger= and stores them in t.
func checkBatchKey(t *model.Task, kind string, kv keyValue, bad func(token.Pos, string, ...any)) bool {
	if kind == "cron" {
		bad(kv.pos, "%s is only a //bananas:task key: a cron entry fires one job per tick", kv.key)
		return false
	}
	switch kv.key {
	case "batch":
		n, err := strconv.Atoi(kv.value)
		if err != nil || n < 1 || n > MaxBatch || strconv.Itoa(n) != kv.value {
			bad(kv.valuePos, "batch=%s is not a whole number from 1 to %d", kv.value, MaxBatch)
			return false
		}
		t.Batch = n
	case "linger":
		d, err := time.ParseDuration(kv.value)
		if err != nil || d <= 0 || d > time.Hour {
			bad(kv.valuePos, "linger=%s is not a Go duration from 1ms to 1h (e.g. linger=200ms)", kv.value)
			return false
		}
		t.Linger = d
	}
	return true
}

// batched reports whether fd is to be checked as a batch handler: its
// directive says batch=, or its results are a batch handler's ([]error
// last), which without batch= is a mistake checkBatchSignature reports.
func batched(d *directive, sig *types.Signature) bool {
	for _, kv := range d.keys {
		if kv.key == "batch" {
			return true
		}
	}
	r := sig.Results()
	return r.Len() >= 1 && isErrorSlice(r.At(r.Len()-1).Type())
}

func isErrorSlice(t types.Type) bool {
	s, ok := t.(*types.Slice)
	return ok && isError(s.Elem())
}

// checkBatchSignature checks the signature of a batch handler (or of a
// function shaped as one whose directive lacks batch=) and fills t's args,
// result and shape. The args are the slice's element: the stub enqueues one.
func checkBatchSignature(p *packages.Package, fd *ast.FuncDecl, sig *types.Signature, d *directive, t *model.Task, errs *collector) bool {
	fn := fd.Name.Name
	qual := types.RelativeTo(p.Types)
	var batchKV *keyValue
	for i := range d.keys {
		switch d.keys[i].key {
		case "batch":
			batchKV = &d.keys[i]
		}
	}
	if d.kind == "cron" {
		if batchKV == nil {
			errs.add(fd.Type.Pos(), "cron function %s returns []error, the shape of a batch handler: a cron function is func(ctx context.Context) error", fn)
		}
		return false // batch= on a cron entry is reported by checkBatchKey
	}
	if sig.TypeParams().Len() > 0 {
		errs.add(fd.Name.Pos(), "task function %s is generic: tasks need concrete argument and result types", fn)
		return false
	}
	params, results := sig.Params(), sig.Results()
	if batchKV == nil {
		errs.add(fd.Type.Pos(), "task function %s has signature %s, a batch handler's, but its directive has no batch=: add batch=N (the most jobs a call takes) and linger=D, or return error or (R, error) to run one job at a time",
			fn, types.TypeString(sig, qual))
		return false
	}
	if sig.Variadic() || params.Len() != 2 || !isContext(params.At(0).Type()) {
		errs.add(fd.Type.Pos(), "task function %s has signature %s: batch=%s needs %s", fn, types.TypeString(sig, qual), batchKV.value, acceptedBatch)
		return false
	}
	slice, ok := params.At(1).Type().(*types.Slice)
	if !ok {
		errs.add(fieldPos(fd.Type.Params, 1), "task function %s takes %s, not a slice: batch=%s hands the function many jobs at once, so it takes []A (the args of one job are A), as in %s",
			fn, types.TypeString(params.At(1).Type(), qual), batchKV.value, acceptedBatch)
		return false
	}
	switch {
	case results.Len() == 1 && isError(results.At(0).Type()):
		t.BatchShape = model.BatchError
	case results.Len() == 1 && isErrorSlice(results.At(0).Type()):
		t.BatchShape = model.BatchErrors
	case results.Len() == 2 && isErrorSlice(results.At(1).Type()):
		t.BatchShape = model.BatchResults
	default:
		errs.add(fd.Type.Pos(), "task function %s has signature %s: batch=%s needs %s", fn, types.TypeString(sig, qual), batchKV.value, acceptedBatch)
		return false
	}
	ok = true
	at := slice.Elem()
	if why := carry(at, typeName(at, qual), map[types.Type]bool{}); why != "" {
		errs.add(fieldPos(fd.Type.Params, 1), "args of %s cannot travel as msgpack: %s; use basic types, time.Time, structs of exported fields, pointers, slices, arrays and maps with basic keys", fn, why)
		ok = false
	} else {
		t.Args = typeExpr(at)
		t.ArgsType = typeName(at, qual)
		t.Fields = fields(at, qual)
	}
	if t.BatchShape == model.BatchResults {
		rs, isSlice := results.At(0).Type().(*types.Slice)
		if !isSlice {
			errs.add(fd.Type.Results.Pos(), "task function %s returns %s first: a batch handler returns ([]R, []error), one result and one error per job", fn, types.TypeString(results.At(0).Type(), qual))
			return false
		}
		rt := rs.Elem()
		if why := carry(rt, typeName(rt, qual), map[types.Type]bool{}); why != "" {
			errs.add(fd.Type.Results.Pos(), "result of %s cannot travel as msgpack: %s; use basic types, time.Time, structs of exported fields, pointers, slices, arrays and maps with basic keys", fn, why)
			ok = false
		} else {
			t.Result = typeExpr(rt)
			t.ResultType = typeName(rt, qual)
		}
	}
	return ok
}

// checkBatch checks what batch= and linger= need of each other, once every
// key is read: linger without batch is a mistake, batch without linger
// takes DefaultLinger.
func checkBatch(d *directive, t *model.Task, bad func(token.Pos, string, ...any)) {
	for _, kv := range d.keys {
		if kv.key == "linger" && t.Batch == 0 && t.Linger > 0 {
			bad(kv.pos, "linger needs batch: linger=%s is how long a batch waits for more jobs after its first (e.g. batch=100 linger=%s)", kv.value, kv.value)
		}
	}
	if t.Batch > 0 && t.Linger == 0 {
		t.Linger = DefaultLinger
	}
}

// keyedArgs is the type a key= path starts from: a batch handler's args
// are the element of the slice it takes.
func keyedArgs(t *model.Task, at types.Type) types.Type {
	if s, ok := at.(*types.Slice); ok && t.Batch > 0 {
		return s.Elem()
	}
	return at
}
