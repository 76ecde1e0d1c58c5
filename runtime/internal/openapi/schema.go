package openapi

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Schema returns the JSON Schema of the JSON that encoding/json reads and
// writes for t, with every named struct type it reaches under "$defs" and
// referenced as "#/$defs/<name>". Document uses the same translation and puts
// those types under components/schemas instead.
func Schema(t reflect.Type) (map[string]any, error) {
	g := newGenerator(nil)
	s, err := g.schema(t, t.String())
	if err != nil {
		return nil, err
	}
	names := g.name(nil, nil)
	r := resolver{names: names, prefix: "#/$defs/"}
	out := r.resolve(s).(map[string]any)
	if len(g.defs) > 0 {
		defs := map[string]any{}
		for t, d := range g.defs {
			defs[names[t]] = r.resolve(d)
		}
		out["$defs"] = defs
	}
	return out, nil
}

// ref stands for a reference to the component of a named struct type until
// every type has its name, which depends on all the types reached.
type ref struct{ t reflect.Type }

type generator struct {
	custom map[reflect.Type]map[string]any
	// answers: the types reached are written by the server, so a key that
	// encoding/json always writes is required (a request's key never is).
	answers bool
	defs    map[reflect.Type]any // named struct types reached, by their schema
	seen    []reflect.Type       // the same types, in the order first reached
}

func newGenerator(custom map[reflect.Type]map[string]any) *generator {
	return &generator{custom: custom, defs: map[reflect.Type]any{}}
}

var (
	timeType        = reflect.TypeFor[time.Time]()
	durationType    = reflect.TypeFor[time.Duration]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textMarshalType = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// implements reports whether t or *t has any of the methods of ifaces:
// encoding/json calls them on addressable values, which every decoded value
// and every field of an encoded pointer is.
func implements(t reflect.Type, ifaces ...reflect.Type) bool {
	for _, i := range ifaces {
		if t.Implements(i) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(i)) {
			return true
		}
	}
	return false
}

// schema is the schema of t, met at path (for errors: the type, then the
// JSON names of the fields that led to it).
func (g *generator) schema(t reflect.Type, path string) (any, error) {
	if s, ok := g.custom[t]; ok {
		return clone(s), nil
	}
	switch {
	case t.Kind() == reflect.Pointer:
		s, err := g.schema(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		return nullable(s), nil
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == durationType:
		return map[string]any{"type": "integer", "format": "int64",
			"description": "A duration in nanoseconds (Go's time.Duration, as encoding/json writes it)."}, nil
	case t == rawMessageType:
		return map[string]any{"description": "Any JSON value."}, nil
	case implements(t, marshalerType, unmarshalerType):
		return map[string]any{"description": fmt.Sprintf("The JSON of %s, which encodes itself (json.Marshaler): its shape is not known here.", t)}, nil
	case implements(t, textMarshalType, textUnmarshType):
		return map[string]any{"type": "string", "description": fmt.Sprintf("The text form of %s.", t)}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		s := map[string]any{"type": "integer", "minimum": int64(-1) << (bits - 1), "maximum": int64(math.MaxInt64 >> (64 - bits))}
		if bits >= 32 {
			s["format"] = "int" + strconv.Itoa(bits)
		}
		return s, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer", "minimum": 0, "maximum": uint64(math.MaxUint64 >> (64 - t.Bits()))}, nil
	case reflect.Float32:
		return map[string]any{"type": "number", "format": "float"}, nil
	case reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}, nil
	case reflect.Interface:
		return map[string]any{"description": "Any JSON value."}, nil
	case reflect.Slice:
		// encoding/json writes a nil slice as null, so a result may hold one.
		if t.Elem().Kind() == reflect.Uint8 && !implements(t.Elem(), marshalerType, textMarshalType) {
			return map[string]any{"type": []any{"string", "null"}, "contentEncoding": "base64"}, nil
		}
		items, err := g.schema(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": []any{"array", "null"}, "items": items}, nil
	case reflect.Array:
		// An array ([N]T, [N]byte too) is always written with its N elements.
		items, err := g.schema(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items, "minItems": t.Len(), "maxItems": t.Len()}, nil
	case reflect.Map:
		return g.mapSchema(t, path)
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t, path)
		}
		if _, ok := g.defs[t]; !ok {
			g.defs[t] = nil // reached: a recursive field refers to it
			g.seen = append(g.seen, t)
			s, err := g.object(t, path)
			if err != nil {
				return nil, err
			}
			g.defs[t] = s
		}
		return ref{t}, nil
	}
	return nil, fmt.Errorf("openapi: %s: type %s has no JSON form (encoding/json cannot encode a %s)", path, t, t.Kind())
}

func (g *generator) mapSchema(t reflect.Type, path string) (any, error) {
	s := map[string]any{"type": []any{"object", "null"}}
	switch k := t.Key(); {
	case k.Kind() == reflect.String:
	case implements(k, textMarshalType):
		s["propertyNames"] = map[string]any{"description": fmt.Sprintf("The text form of %s.", k)}
	case k.Kind() >= reflect.Int && k.Kind() <= reflect.Int64:
		s["propertyNames"] = map[string]any{"pattern": "^-?[0-9]+$"}
	case k.Kind() >= reflect.Uint && k.Kind() <= reflect.Uintptr:
		s["propertyNames"] = map[string]any{"pattern": "^[0-9]+$"}
	default:
		return nil, fmt.Errorf("openapi: %s: map key type %s has no JSON form (keys are strings, integers or encoding.TextMarshaler)", path, k)
	}
	v, err := g.schema(t.Elem(), path+"[key]")
	if err != nil {
		return nil, err
	}
	s["additionalProperties"] = v
	return s, nil
}

// object is the schema of struct t: closed, since the args decoder refuses
// unknown keys, and with nothing required, since encoding/json leaves a
// missing key's field at its zero value. In an answer (g.answers) the keys
// encoding/json always writes are required: those of t's own fields without
// omitempty or omitzero (a field promoted through an embedded pointer is
// left out when the pointer is nil).
func (g *generator) object(t reflect.Type, path string) (any, error) {
	props := map[string]any{}
	var required []any
	for _, f := range jsonFields(t) {
		if g.answers && !f.omitted && len(f.index) == 1 {
			required = append(required, f.name)
		}
		fpath := path + "." + f.name
		var s any
		var err error
		if f.quoted {
			s, err = quotedSchema(f.typ), nil
		} else {
			s, err = g.schema(f.typ, fpath)
		}
		if err != nil {
			return nil, err
		}
		props[f.name] = s
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// quotedSchema is the schema of a field tagged ",string": encoding/json
// writes its value inside a JSON string.
func quotedSchema(t reflect.Type) any {
	s := map[string]any{"type": "string", "description": fmt.Sprintf("A value of Go type %s, written inside a JSON string (json tag option \"string\").", t)}
	if t.Kind() == reflect.Pointer {
		return nullable(s)
	}
	return s
}

// nullable is s, or null.
func nullable(s any) any {
	if m, ok := s.(map[string]any); ok {
		switch typ := m["type"].(type) {
		case string:
			m["type"] = []any{typ, "null"}
			return m
		case []any:
			if !slices.Contains(typ, any("null")) {
				m["type"] = append(typ, "null")
			}
			return m
		case nil:
			if len(m) == 0 || (len(m) == 1 && m["description"] != nil) {
				return m // any JSON value already takes null
			}
		}
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// field is one key of a struct's JSON object.
type field struct {
	name   string
	index  []int
	typ    reflect.Type // as declared (a pointer stays a pointer)
	tagged bool
	quoted bool
	// omitted: tagged omitempty or omitzero, so encoding/json may leave the
	// key out.
	omitted bool
}

// jsonFields lists the keys of t's JSON object as encoding/json chooses them:
// tags honoured, "-" and unexported fields skipped, embedded structs'
// fields promoted, and of several fields of one name the shallowest (then
// the tagged one) wins while a tie drops them all.
func jsonFields(t reflect.Type) []field {
	var fields []field
	next := []level{{typ: t}}
	var count map[reflect.Type]int
	nextCount := map[reflect.Type]int{}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				f, embedded, ok := structField(l, i)
				switch {
				case !ok:
				case embedded != nil:
					nextCount[embedded]++
					if nextCount[embedded] == 1 {
						next = append(next, level{typ: embedded, index: f.index})
					}
				default:
					fields = append(fields, f)
					if count[l.typ] > 1 {
						// Two embeddings of one type at this depth: the
						// duplicate makes the name ambiguous, so it is dropped.
						fields = append(fields, f)
					}
				}
			}
		}
	}
	return dominant(fields)
}

// level is a struct type whose fields are promoted, at index.
type level struct {
	typ   reflect.Type
	index []int
}

// structField is field i of l's type as a key (ok), or, for an untagged
// embedded struct, the struct whose fields it promotes (embedded; the
// field's index is where); ok is false for a field encoding/json skips.
func structField(l level, i int) (f field, embedded reflect.Type, ok bool) {
	sf := l.typ.Field(i)
	if sf.Anonymous {
		et := sf.Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if !sf.IsExported() && et.Kind() != reflect.Struct {
			return field{}, nil, false
		}
	} else if !sf.IsExported() {
		return field{}, nil, false
	}
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return field{}, nil, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if !validTag(name) {
		name = ""
	}
	index := append(slices.Clone(l.index), i)
	ft := sf.Type
	if ft.Name() == "" && ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
		return field{index: index}, ft, true
	}
	optList := strings.Split(opts, ",")
	quoted := false
	if slices.Contains(optList, "string") {
		switch ft.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.String:
			quoted = true
		}
	}
	f = field{name: name, index: index, typ: sf.Type, tagged: name != "", quoted: quoted,
		omitted: slices.Contains(optList, "omitempty") || slices.Contains(optList, "omitzero")}
	if f.name == "" {
		f.name = sf.Name
	}
	return f, nil, true
}

// dominant keeps, of the fields of one name, the shallowest, then the
// tagged one; a tie drops them all.
func dominant(fields []field) []field {
	slices.SortStableFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var out []field
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		if len(group) == 1 || len(group[0].index) != len(group[1].index) || group[0].tagged != group[1].tagged {
			out = append(out, group[0])
		}
		i = j
	}
	return out
}

// validTag is encoding/json's test of a tag name: one it refuses leaves the
// field under its Go name.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// clone copies a caller's schema so that the document never aliases it.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = clone(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = clone(x)
		}
		return out
	}
	return v
}

// name gives every named struct type reached a component name, unique in the
// document and independent of the order the types were reached in: its Go
// name when no other type has it, else qualified by as much of its package
// path as tells it apart. taken holds the names already used; a type in
// fixed has its name already.
func (g *generator) name(taken map[string]bool, fixed map[reflect.Type]string) map[reflect.Type]string {
	if taken == nil {
		taken = map[string]bool{}
	}
	names := map[reflect.Type]string{}
	byBase := map[string][]reflect.Type{}
	for _, t := range g.seen {
		if n, ok := fixed[t]; ok {
			names[t] = n
			continue
		}
		b := componentName(t.Name())
		byBase[b] = append(byBase[b], t)
	}
	for _, b := range slices.Sorted(maps.Keys(byBase)) {
		ts := slices.Clone(byBase[b])
		slices.SortStableFunc(ts, func(x, y reflect.Type) int { return strings.Compare(x.PkgPath(), y.PkgPath()) })
		for _, t := range ts {
			var candidates []string
			if len(ts) == 1 {
				candidates = append(candidates, b)
			}
			candidates = append(candidates, qualified(t, ts)+b)
			names[t] = claim(taken, candidates...)
		}
	}
	return names
}

// qualified is the shortest tail of t's package path that no other type of
// others from another package ends with, as the PascalCase prefix of a
// component name (net/http: Http); types of one package (declared in
// different functions) are numbered instead.
func qualified(t reflect.Type, others []reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	for i := len(parts) - 1; i > 0; i-- {
		tail := strings.Join(parts[i:], "/")
		clash := false
		for _, o := range others {
			p := o.PkgPath()
			clash = clash || (p != t.PkgPath() && (p == tail || strings.HasSuffix(p, "/"+tail)))
		}
		if !clash {
			return camel(tail)
		}
	}
	return camel(t.PkgPath())
}

// componentName is the name a reader of the document sees for a Go type
// named goName: PascalCase, its words run together, without the JSON
// suffix a type that only shapes an answer's JSON often carries
// (jobSummaryJSON is JobSummary).
func componentName(goName string) string {
	n := camel(goName)
	if trimmed := strings.TrimSuffix(n, "JSON"); trimmed != "" {
		n = trimmed
	}
	return n
}

// claim takes the first free candidate, or the last one numbered.
func claim(taken map[string]bool, candidates ...string) string {
	for _, c := range candidates {
		if c != "" && !taken[c] {
			taken[c] = true
			return c
		}
	}
	last := candidates[len(candidates)-1]
	for n := 2; ; n++ {
		if c := last + strconv.Itoa(n); !taken[c] {
			taken[c] = true
			return c
		}
	}
}

// resolver turns refs into "$ref"s once every type has its name.
type resolver struct {
	names  map[reflect.Type]string
	prefix string
}

func (r resolver) resolve(v any) any {
	switch v := v.(type) {
	case ref:
		return map[string]any{"$ref": r.prefix + r.names[v.t]}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if t, ok := x.(ref); ok && k == "$ref" {
				out[k] = r.prefix + r.names[t.t] // a $ref with siblings
				continue
			}
			out[k] = r.resolve(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = r.resolve(x)
		}
		return out
	}
	return v
}
