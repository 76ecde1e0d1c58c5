// Package strictjson decodes JSON args exactly, as the HTTP API, the CLI
// and the generated decoders take them (runtime.DecodeStrictJSON): keys as
// the fields' JSON names are written, no unknown key, no trailing data, a
// bounded depth, and every refusal naming the field by its path. It knows
// Go types through reflection and nothing of tasks, Redis or the runtime.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/internal/mpack"
)

// Decode decodes data into v exactly: an object key must be a field's JSON
// name as written (encoding/json would also take "url" for URL), unknown
// keys and trailing data are refused, and so are empty input and null —
// unless none (a task that takes no args), where they mean nothing — and
// containers nested deeper than msgpack carries (MaxDepth). Each error
// names the field by its path, list indexes included (field
// "lines[2].qty").
//
// The work is linear in len(data), a fixed number of passes at any nesting:
// for input that is right, a scan of the keys against v's type (which
// bounds the depth too) and a decode; for input refused, a scan of the
// depth, a parse into a tree and a walk of it against the type, which names
// what is wrong.
func Decode(data []byte, v any, none bool) error {
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		if none {
			return nil
		}
		if len(trimmed) == 0 {
			return errors.New("no args given: want a JSON object")
		}
		return errors.New("args are null: want a JSON object")
	}
	// The common case, args that are right: a scan of the keys and the
	// depth against the type, then encoding/json. Anything the scan or the
	// decoder refuses is explained below.
	if exactKeysScan(data, reflect.TypeOf(v)) && json.Unmarshal(data, v) == nil {
		return nil
	}
	if err := checkJSONDepth(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	var w strictWalk
	if err := w.value(tree, reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return jsonError(err)
	}
	return nil
}

// MaxDepth caps how deeply objects and arrays may nest in JSON args: as
// deep as the msgpack that carries args to the worker may nest.
const MaxDepth = mpack.MaxDepth

// exactKeysScan reports whether data is one JSON value whose every object
// key is, as written, the JSON name of a field of the struct it decodes into
// (t, followed through fields, elements and map values), in one pass over
// the bytes without allocating, and whose containers nest within
// MaxDepth (which bounds the recursion). False is no verdict: the
// caller's checks then find what is wrong, if anything.
func exactKeysScan(data []byte, t reflect.Type) bool {
	s := keyScan{b: data}
	if !s.value(t) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// keyScan is exactKeysScan's position in its bytes, depth containers down.
type keyScan struct {
	b     []byte
	i     int
	depth int
}

func (s *keyScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value that decodes into t; t nil takes any keys.
func (s *keyScan) value(t reflect.Type) bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var info scanInfo
	if t != nil {
		if info = scanInfoFor(t); info.opaque {
			t = nil // decodes itself, or takes any JSON: no keys of ours inside
		}
	}
	switch s.b[s.i] {
	case '{', '[':
		if s.depth == MaxDepth {
			return false
		}
		s.depth++
		var ok bool
		if s.b[s.i] == '{' {
			ok = s.object(t, info)
		} else {
			ok = s.array(t)
		}
		s.depth--
		return ok
	case '"':
		return s.skipString()
	}
	s.skipScalar()
	return true
}

// object scans an object that decodes into t (a struct whose fields info
// holds, or a map); t nil takes any keys.
func (s *keyScan) object(t reflect.Type, info scanInfo) bool {
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
		case reflect.Map:
			elem = t.Elem()
		default:
			return false
		}
	}
	if !s.open('}') {
		return true
	}
	for {
		key, ok := s.str()
		if s.space(); !ok || s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		member := elem
		if info.fields != nil {
			f, known := info.fields[string(key)]
			if !known {
				return false
			}
			if member = f.typ; f.quoted {
				member = nil
			}
		}
		if !s.value(member) {
			return false
		}
		if done, ok := s.next('}'); !ok || done {
			return ok
		}
	}
}

// array scans an array whose elements decode into t's; t nil takes any keys.
func (s *keyScan) array(t reflect.Type) bool {
	var elem reflect.Type
	if t != nil {
		if k := t.Kind(); k != reflect.Slice && k != reflect.Array {
			return false
		}
		elem = t.Elem()
	}
	if !s.open(']') {
		return true
	}
	for {
		if !s.value(elem) {
			return false
		}
		if done, ok := s.next(']'); !ok || done {
			return ok
		}
	}
}

// skipString steps past a string value: its escapes skipped, not read. It
// reports false when the string does not end.
func (s *keyScan) skipString() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return true
		}
	}
	return false
}

// skipScalar steps past a number, true, false or null: encoding/json checks
// it.
func (s *keyScan) skipScalar() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return
		}
		s.i++
	}
}

// open steps past the opening byte of an object or array and reports
// whether it has members; when it has none it steps past the closing byte
// too.
func (s *keyScan) open(closing byte) bool {
	s.i++
	if s.space(); s.i < len(s.b) && s.b[s.i] == closing {
		s.i++
		return false
	}
	return true
}

// next steps past the comma after a member (done false) or the closing
// byte (done true); ok is false for anything else.
func (s *keyScan) next(closing byte) (done, ok bool) {
	if s.space(); s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.space()
		return false, true
	case closing:
		s.i++
		return true, true
	}
	return false, false
}

// scanInfo is what exactKeysScan needs of a type (pointers followed).
type scanInfo struct {
	opaque bool                 // decodes itself (JSON or text), or is an interface
	fields map[string]jsonField // a struct's
}

// scanInfoOf caches scanInfoFor by type: reflect.Type -> scanInfo.
var scanInfoOf sync.Map

func scanInfoFor(t reflect.Type) scanInfo {
	if v, ok := scanInfoOf.Load(t); ok {
		return v.(scanInfo)
	}
	pt := reflect.PointerTo(t)
	info := scanInfo{opaque: t.Kind() == reflect.Interface || pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType)}
	if !info.opaque && t.Kind() == reflect.Struct {
		info.fields = cachedJSONFields(t)
	}
	scanInfoOf.Store(t, info)
	return info
}

// str scans a key at s.i and returns its bytes: a key with an escape is no
// verdict (ok false), the walk reads it.
func (s *keyScan) str() (raw []byte, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			return nil, false
		case '"':
			s.i = j + 1
			return s.b[start:j], true
		}
	}
	return nil, false
}

// checkJSONDepth refuses JSON whose objects and arrays nest deeper than
// MaxDepth, naming the path to the first container too deep, in one pass
// over the bytes (encoding/json would parse 10,000 levels). What is not
// well-formed is left to the parser.
func checkJSONDepth(data []byte) error {
	type open struct {
		array bool
		step  pathStep
	}
	stack := make([]open, 0, 16) // on the goroutine's stack for the usual shallow args
	inString, escaped := false, false
	var last []byte // the last string read: an object's key, at its colon
	start := 0
	for i, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				last = data[start:i]
			}
			continue
		}
		top := len(stack) - 1
		switch c {
		case '"':
			inString, start = true, i+1
		case ':':
			if top >= 0 && !stack[top].array {
				stack[top].step = pathStep{key: string(last)}
			}
		case ',':
			if top >= 0 && stack[top].array {
				stack[top].step.index++
			}
		case '{', '[':
			if len(stack) >= MaxDepth {
				w := strictWalk{path: make([]pathStep, len(stack))}
				for k, o := range stack {
					w.path[k] = o.step
				}
				return w.fail("nested deeper than %d levels", MaxDepth)
			}
			stack = append(stack, open{array: c == '['})
		case '}', ']':
			if top >= 0 {
				stack = stack[:top]
			}
		}
	}
	return nil
}

// jsonError names what encoding/json refused.
func jsonError(err error) error {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ute):
		return fmt.Errorf("field %q: want %s, got JSON %s", ute.Field, ute.Type, ute.Value)
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
	}
	return err
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType            = reflect.TypeFor[time.Time]()
)

// strictWalk checks a parsed JSON tree against the Go type it is to decode
// into, once per node: keys exactly as the fields' JSON names, values of the
// kind the type takes, nesting within MaxDepth. Its errors name the path
// to the value; the path is kept as a stack and spelled out only on error.
type strictWalk struct {
	path []pathStep
}

// pathStep is one step from a value to one inside it: a struct field, a map
// key (key, with isKey) or a list index.
type pathStep struct {
	key   string
	isKey bool
	index int
}

// at spells the path the walk is at, as Go would write the selector:
// Lines[2].Qty, Labels["k"]; deep paths keep their first and last steps.
func (w *strictWalk) at() string {
	const shown = 12
	steps := w.path
	var b strings.Builder
	for i, s := range steps {
		if len(steps) > shown && i == shown/2 {
			b.WriteString("…")
		}
		if len(steps) > shown && i >= shown/2 && i < len(steps)-shown/2 {
			continue
		}
		switch {
		case s.isKey:
			fmt.Fprintf(&b, "[%q]", s.key)
		case s.key != "":
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			fmt.Fprintf(&b, "[%d]", s.index)
		}
	}
	return b.String()
}

// fail is an error about the value the walk is at.
func (w *strictWalk) fail(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if len(w.path) == 0 {
		return errors.New(msg)
	}
	return fmt.Errorf("field %q: %s", w.at(), msg)
}

// wrongKind is the error of a JSON value of the wrong kind for t.
func (w *strictWalk) wrongKind(t reflect.Type, v any) error {
	return w.fail("want %s, got JSON %s", t, jsonKind(v))
}

// jsonKind names a parsed JSON value as encoding/json's errors do.
func jsonKind(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		return "number " + v.String()
	}
	return "null"
}

// value checks v against t.
func (w *strictWalk) value(v any, t reflect.Type) error {
	if v == nil {
		return nil // null leaves the Go value as it is
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem() // encoding/json allocates what a pointer points to
	}
	if t == timeType {
		s, ok := v.(string)
		if _, err := time.Parse(time.RFC3339, s); !ok || err != nil {
			return w.fail("want an RFC 3339 time such as \"2026-01-02T15:04:05Z\", got %s", jsonText(v))
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return w.unmarshaler(v, t)
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		s, ok := v.(string)
		if !ok {
			return w.wrongKind(t, v)
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return w.fail("%v", err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return w.wrongKind(t, v)
		}
		return w.object(obj, t)
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return w.wrongKind(t, v)
		}
		return w.eachKey(obj, func(key string, val any) error {
			w.path = append(w.path, pathStep{key: key, isKey: true})
			if err := w.value(val, t.Elem()); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
			return nil
		})
	case reflect.Slice, reflect.Array:
		if s, ok := v.(string); ok && t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				return w.fail("want base64 bytes, got %s: %v", jsonText(v), err)
			}
			return nil
		}
		items, ok := v.([]any)
		if !ok {
			return w.wrongKind(t, v)
		}
		if t.Kind() == reflect.Array {
			items = items[:min(len(items), t.Len())] // encoding/json drops the rest
		}
		for i, item := range items {
			w.path = append(w.path, pathStep{index: i})
			if err := w.value(item, t.Elem()); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return w.fail("cannot decode JSON into %s, an interface with methods", t)
		}
		return nil // takes any JSON value
	default:
		return w.scalar(v, t)
	}
	return nil
}

// object checks the keys and values of a JSON object decoded into struct t.
func (w *strictWalk) object(obj map[string]any, t reflect.Type) error {
	fields := cachedJSONFields(t)
	return w.eachKey(obj, func(key string, val any) error {
		f, ok := fields[key]
		if !ok {
			in := ""
			if len(w.path) > 0 {
				in = " in " + w.at()
			}
			for name := range fields {
				if strings.EqualFold(name, key) {
					return fmt.Errorf("unknown field %q%s: JSON keys match exactly; did you mean %q?", key, in, name)
				}
			}
			return fmt.Errorf("unknown field %q%s", key, in)
		}
		w.path = append(w.path, pathStep{key: key})
		var err error
		switch s, isString := val.(string); {
		case !f.quoted:
			err = w.value(val, f.typ)
		case isString:
			err = w.quoted(s, f.typ)
		case val != nil:
			err = w.fail("want %s in a JSON string (the field is tagged \",string\"), got %s", f.typ, jsonText(val))
		}
		if err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
		return nil
	})
}

// eachKey calls check with every key of obj and its value. On a failure it
// reports the first key's failure in sorted order, so that the error does
// not depend on map order; the sort is paid for only then.
func (w *strictWalk) eachKey(obj map[string]any, check func(key string, val any) error) error {
	mark := len(w.path)
	for key, val := range obj {
		if err := check(key, val); err != nil {
			w.path = w.path[:mark]
			for _, key := range sortedKeys(obj) {
				if err := check(key, obj[key]); err != nil {
					return err
				}
			}
			return err
		}
	}
	return nil
}

// quoted checks the string s of a field tagged ",string": the JSON of a
// scalar, quoted.
func (w *strictWalk) quoted(s string, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var inner any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&inner); err != nil || dec.More() {
		return w.fail("want %s in a JSON string, got %q", t, s)
	}
	return w.scalar(inner, t)
}

// scalar checks a JSON value decoded into a string, bool or number kind.
func (w *strictWalk) scalar(v any, t reflect.Type) error {
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); ok {
			return nil
		}
	case reflect.Bool:
		if _, ok := v.(bool); ok {
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := v.(json.Number); ok {
			if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err == nil {
				return nil
			}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if n, ok := v.(json.Number); ok {
			if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err == nil {
				return nil
			}
		}
	case reflect.Float32, reflect.Float64:
		if n, ok := v.(json.Number); ok {
			if _, err := strconv.ParseFloat(n.String(), t.Bits()); err == nil {
				return nil
			}
		}
	default:
		return w.fail("cannot decode JSON into %s", t)
	}
	return w.wrongKind(t, v)
}

// unmarshaler checks v with the UnmarshalJSON of *t: t decodes itself.
func (w *strictWalk) unmarshaler(v any, t reflect.Type) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return w.fail("%v", err)
	}
	if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
		return w.fail("%v", err)
	}
	return nil
}

// jsonText is a parsed JSON value as JSON, cut short when long.
func jsonText(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return jsonKind(v)
	}
	const most = 64
	if len(raw) > most {
		return fmt.Sprintf("%s… (%d bytes)", raw[:most], len(raw))
	}
	return string(raw)
}

func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonFieldsOf caches jsonFields by type: reflect.Type -> map[string]jsonField.
var jsonFieldsOf sync.Map

// cachedJSONFields is jsonFields(t), worked out once per type.
func cachedJSONFields(t reflect.Type) map[string]jsonField {
	if f, ok := jsonFieldsOf.Load(t); ok {
		return f.(map[string]jsonField)
	}
	f := jsonFields(t)
	jsonFieldsOf.Store(t, f)
	return f
}

// jsonField is a struct field as encoding/json decodes it: its type, and
// whether it is tagged ",string" (a scalar quoted in a JSON string).
type jsonField struct {
	typ    reflect.Type
	quoted bool
}

// jsonFields maps the JSON names of t's fields, as encoding/json names them
// (tags honoured, "-" skipped, embedded structs' fields promoted), to them.
func jsonFields(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, hasOpts := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" && !hasOpts {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for name, typ := range jsonFields(ft) {
					if _, shadowed := out[name]; !shadowed {
						out[name] = typ
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag != "" {
			name = tag
		}
		quoted := false
		for _, o := range strings.Split(opts, ",") {
			quoted = quoted || o == "string"
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() { // encoding/json honours ",string" on scalars only
		case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
			quoted = false
		}
		out[name] = jsonField{typ: f.Type, quoted: quoted}
	}
	return out
}
