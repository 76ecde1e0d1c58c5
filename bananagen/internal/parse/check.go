package parse

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/bananas-go/bananas/bananagen/internal/model"
)

const accepted = "func(ctx context.Context, args A) error, func(ctx context.Context, args A) (R, error), func(ctx context.Context) error or func(ctx context.Context) (R, error)"

// checkSignature checks fd's signature against the accepted shapes and the
// args and result types against what msgpack can carry, filling t.
func checkSignature(p *packages.Package, fd *ast.FuncDecl, sig *types.Signature, kind string, t *model.Task, errs *collector) bool {
	fn := fd.Name.Name
	if sig.TypeParams().Len() > 0 {
		errs.add(fd.Name.Pos(), "task function %s is generic: tasks need concrete argument and result types", fn)
		return false
	}
	params, results := sig.Params(), sig.Results()
	shape := func() bool {
		errs.add(fd.Type.Pos(), "task function %s has signature %s: accepted are %s", fn, types.TypeString(sig, types.RelativeTo(p.Types)), accepted)
		return false
	}
	if sig.Variadic() || params.Len() < 1 || params.Len() > 2 || !isContext(params.At(0).Type()) {
		return shape()
	}
	if results.Len() < 1 || results.Len() > 2 || !isError(results.At(results.Len()-1).Type()) {
		return shape()
	}
	ok := true
	qual := types.RelativeTo(p.Types)
	if params.Len() == 2 {
		if kind == "cron" {
			errs.add(fd.Type.Params.List[len(fd.Type.Params.List)-1].Pos(), "cron function %s takes arguments: a cron entry has nothing to pass, use func(ctx context.Context) error", fn)
			ok = false
		}
		at := params.At(1).Type()
		if why := carry(at, typeName(at, qual), map[types.Type]bool{}); why != "" {
			errs.add(fieldPos(fd.Type.Params, 1), "args of %s cannot travel as msgpack: %s; use basic types, time.Time, structs of exported fields, pointers, slices, arrays and maps with basic keys", fn, why)
			ok = false
		} else {
			t.Args = typeExpr(at)
			t.ArgsType = typeName(at, qual)
			t.Fields = fields(at, qual)
		}
	}
	if results.Len() == 2 {
		rt := results.At(0).Type()
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

// fieldPos is the position of the i-th parameter, whether or not names are grouped.
func fieldPos(fl *ast.FieldList, i int) token.Pos {
	n := 0
	for _, f := range fl.List {
		count := max(1, len(f.Names))
		if i < n+count {
			if len(f.Names) > 0 {
				return f.Names[i-n].Pos()
			}
			return f.Type.Pos()
		}
		n += count
	}
	return fl.Pos()
}

func isContext(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

func isError(t types.Type) bool { return types.Identical(t, types.Universe.Lookup("error").Type()) }

func isTime(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time"
}

func typeName(t types.Type, q types.Qualifier) string { return types.TypeString(t, q) }

// carry returns "" when msgpack can carry t, or why not, naming the path to
// the offending part (path starts as the type's name).
func carry(t types.Type, path string, seen map[types.Type]bool) string {
	if isTime(t) {
		return ""
	}
	switch u := t.(type) {
	case *types.Named:
		if seen[t] {
			return ""
		}
		seen[t] = true
		return carry(u.Underlying(), path, seen)
	case *types.Alias:
		return carry(types.Unalias(u), path, seen)
	case *types.Basic:
		switch {
		case u.Kind() == types.UnsafePointer:
			return path + " is an unsafe.Pointer"
		case u.Info()&types.IsComplex != 0:
			return path + " is a complex number"
		case u.Kind() == types.Uintptr:
			return path + " is a uintptr"
		}
		return ""
	case *types.Pointer:
		return carry(u.Elem(), path, seen)
	case *types.Slice:
		return carry(u.Elem(), path+"[]", seen)
	case *types.Array:
		return carry(u.Elem(), path+"[]", seen)
	case *types.Map:
		if b, ok := u.Key().Underlying().(*types.Basic); !ok || b.Info()&(types.IsString|types.IsInteger|types.IsBoolean|types.IsFloat) == 0 {
			return fmt.Sprintf("%s is a map with %s keys (keys must be basic types)", path, u.Key())
		}
		return carry(u.Elem(), path+"[key]", seen)
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue // msgpack skips it
			}
			if why := carry(f.Type(), path+"."+f.Name(), seen); why != "" {
				return why
			}
		}
		return ""
	case *types.Interface:
		return fmt.Sprintf("%s is an interface (%s)", path, t)
	case *types.Chan:
		return path + " is a channel"
	case *types.Signature:
		return path + " is a func"
	case *types.TypeParam:
		return path + " is a type parameter"
	}
	return fmt.Sprintf("%s has unsupported type %s", path, t)
}

// typeExpr converts a checked type to the model's type expression.
func typeExpr(t types.Type) *model.Type {
	switch u := t.(type) {
	case *types.Alias:
		return typeExpr(types.Unalias(u))
	case *types.Named:
		path := ""
		if u.Obj().Pkg() != nil {
			path = u.Obj().Pkg().Path()
		}
		return &model.Type{Kind: model.Named, Path: path, Name: u.Obj().Name()}
	case *types.Basic:
		return &model.Type{Kind: model.Named, Name: u.Name()}
	case *types.Pointer:
		return &model.Type{Kind: model.Pointer, Elem: typeExpr(u.Elem())}
	case *types.Slice:
		return &model.Type{Kind: model.Slice, Elem: typeExpr(u.Elem())}
	case *types.Array:
		return &model.Type{Kind: model.Array, Len: u.Len(), Elem: typeExpr(u.Elem())}
	case *types.Map:
		return &model.Type{Kind: model.Map, Key: typeExpr(u.Key()), Elem: typeExpr(u.Elem())}
	}
	// Unnamed structs and the like: carry() accepted them, but they have no
	// name to write. Report through the type string; emit refuses it.
	return &model.Type{Kind: model.Named, Name: t.String()}
}

// fields lists the exported fields of a struct args type (or pointer to one).
func fields(t types.Type, q types.Qualifier) []model.Field {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return nil
	}
	var out []model.Field
	for i := range st.NumFields() {
		f := st.Field(i)
		if !f.Exported() {
			continue
		}
		mf := model.Field{Name: f.Name(), Type: types.TypeString(f.Type(), q)}
		if tag, ok := reflect.StructTag(st.Tag(i)).Lookup("json"); ok {
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			if name != "" && name != f.Name() {
				mf.JSON = name
			}
		}
		out = append(out, mf)
	}
	return out
}
