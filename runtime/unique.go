package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Until is the point of a job's life until which its unique key is held
// (UniqueUntil).
type Until = queue.Until

// The points a unique key can be held until.
const (
	// UntilStarted: the job's first start frees the key.
	UntilStarted = queue.UntilStarted
	// UntilCompleted: the job's completion frees the key; a job that dies
	// or is canceled leaves it held for the rest of its ttl.
	UntilCompleted = queue.UntilCompleted
	// UntilEnded: the job's end — completed, dead or canceled — frees the
	// key; a retry keeps it. The default.
	UntilEnded = queue.UntilEnded
)

// uniqueConfig holds the options that shape a unique key beyond its ttl.
type uniqueConfig struct {
	by          []string // UniqueBy's field paths; none: all the args
	until       Until
	debounce    time.Duration
	debounceMax time.Duration
}

// checkFieldPath refuses a UniqueBy path that cannot name a field.
func checkFieldPath(path string) error {
	for _, p := range strings.Split(path, ".") {
		if p == "" {
			return fmt.Errorf("field path %q has an empty part", path)
		}
	}
	return nil
}

// checkUnique refuses the unique options that need Unique without it.
func (c *jobConfig) checkUnique() error {
	if c.uniqueTTL > 0 {
		return nil
	}
	switch {
	case c.uniq.debounce > 0:
		return fmt.Errorf("runtime.Debounce needs a unique key: add runtime.Unique(ttl)")
	case c.uniq.debounceMax > 0:
		return fmt.Errorf("runtime.DebounceMax needs runtime.Debounce and runtime.Unique(ttl)")
	case len(c.uniq.by) > 0:
		return fmt.Errorf("runtime.UniqueBy needs runtime.Unique(ttl)")
	case c.uniq.until != "":
		return fmt.Errorf("runtime.UniqueUntil needs runtime.Unique(ttl)")
	}
	return nil
}

// uniqueKeyOf is the unique key of a job of task name: a hash of the name
// and raw, the args as stored, or with fields (UniqueBy) of the canonical
// JSON of those fields of args, an object keyed by the paths (encoding/json
// writes map keys sorted).
func uniqueKeyOf(name string, raw []byte, args any, fields []string) (string, error) {
	h := sha256.New()
	h.Write([]byte(name + "\x00"))
	if len(fields) == 0 {
		h.Write(raw)
	} else {
		picked := make(map[string]any, len(fields))
		for _, f := range fields {
			v, err := fieldAt(reflect.ValueOf(args), f)
			if err != nil {
				return "", fmt.Errorf("runtime.UniqueBy: %w", err)
			}
			picked[f] = v
		}
		b, err := json.Marshal(picked)
		if err != nil {
			return "", fmt.Errorf("runtime.UniqueBy: %w", err)
		}
		h.Write([]byte("by\x00"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// fieldAt returns the value at path (Go field names and string map keys,
// dot-separated) in v; nil when a pointer or map on the way is nil or has
// no such key.
func fieldAt(v reflect.Value, path string) (any, error) {
	for _, part := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return nil, nil
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Struct:
			sf, ok := v.Type().FieldByName(part)
			if !ok || !sf.IsExported() {
				return nil, fmt.Errorf("%s has no exported field %s (path %q)", v.Type(), part, path)
			}
			v = v.FieldByIndex(sf.Index)
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return nil, fmt.Errorf("%s is not a map with string keys (path %q)", v.Type(), path)
			}
			v = v.MapIndex(reflect.ValueOf(part).Convert(v.Type().Key()))
			if !v.IsValid() {
				return nil, nil
			}
		default:
			return nil, fmt.Errorf("%s has no fields: cannot take %s (path %q)", v.Type(), part, path)
		}
	}
	if !v.IsValid() {
		return nil, nil
	}
	return v.Interface(), nil
}

// submissionUniqueOptions are the unique-key options of a submission of the
// API or CLI (unique, unique_by, unique_until, debounce), or a refusal
// naming the one that is wrong.
func submissionUniqueOptions(s admin.Submission) ([]Option, error) {
	var opts []Option
	if s.Unique != "" {
		d, err := time.ParseDuration(s.Unique)
		if err != nil || d <= 0 {
			return nil, admin.InvalidValue("unique", s.Unique, "want a positive duration such as 1h: how long the key is held at most")
		}
		opts = append(opts, Unique(d))
	}
	needs := func(field, v string) error {
		return admin.InvalidValue(field, v, "needs unique (the key's ttl, such as 1h)")
	}
	if s.UniqueBy != "" {
		if s.Unique == "" {
			return nil, needs("unique_by", s.UniqueBy)
		}
		fields := strings.Split(s.UniqueBy, ",")
		for _, f := range fields {
			if checkFieldPath(f) != nil {
				return nil, admin.InvalidValue("unique_by", s.UniqueBy, "want comma-separated fields of the args, such as To,Subject or Order.ID")
			}
		}
		opts = append(opts, UniqueBy(fields...))
	}
	if s.UniqueUntil != "" {
		if s.Unique == "" {
			return nil, needs("unique_until", s.UniqueUntil)
		}
		if _, err := queue.ParseUntil(s.UniqueUntil); err != nil {
			return nil, admin.InvalidValue("unique_until", s.UniqueUntil, "use started, completed or ended")
		}
		opts = append(opts, UniqueUntil(Until(s.UniqueUntil)))
	}
	if s.Debounce != "" {
		if s.Unique == "" {
			return nil, needs("debounce", s.Debounce)
		}
		d, err := time.ParseDuration(s.Debounce)
		if err != nil || d <= 0 {
			return nil, admin.InvalidValue("debounce", s.Debounce, "want a positive duration such as 5s")
		}
		opts = append(opts, Debounce(d))
	}
	return opts, nil
}

// checkUniqueBy refuses, naming unique_by, a submission whose unique_by
// names a field its task's args do not have.
func checkUniqueBy(s admin.Submission) error {
	if s.UniqueBy == "" {
		return nil
	}
	d, ok := declaredTasks.Load(s.Name)
	if !ok || d.(*argsDecoder).typ == nil {
		return nil // an unknown task is refused by name
	}
	for _, f := range strings.Split(s.UniqueBy, ",") {
		if why := fieldPathOf(d.(*argsDecoder).typ, f); why != "" {
			return admin.InvalidValue("unique_by", s.UniqueBy, why)
		}
	}
	return nil
}

// fieldPathOf says why path names no exported field of t (through structs,
// pointers, and maps with string keys, whose keys are the job's), or "".
func fieldPathOf(t reflect.Type, path string) string {
	for _, part := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			if t.Key().Kind() == reflect.String {
				return ""
			}
			return fmt.Sprintf("%s is not a map with string keys (path %s)", t, path)
		case reflect.Struct:
			sf, ok := t.FieldByName(part)
			if !ok || !sf.IsExported() {
				return fmt.Sprintf("%s has no exported field %s (path %s)", t, part, path)
			}
			t = sf.Type
		default:
			return fmt.Sprintf("%s has no fields: cannot take %s (path %s)", t, part, path)
		}
	}
	return ""
}
