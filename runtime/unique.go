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
