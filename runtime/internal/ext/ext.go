// Package ext is the registry of extensions a runtime.Client carries: the
// state of a feature (the task history, Once's timings, the runner of
// workflows) is kept here under a key the feature's own file declares,
// rather than in a field of Client, so that a feature added to the runtime
// adds no field to Client and Client's file need not know it.
//
// A key is a value of an unexported type of the feature's (typically an
// empty struct), so no two features can share one. Each value is made once,
// at its first use or when Connect puts it, and the registry is safe for
// concurrent use. It must not know any feature: it keeps values by key.
package ext

import "sync"

// Registry keeps one value per key. Its zero value is ready to use; it must
// not be copied once used.
type Registry struct {
	mu    sync.Mutex
	slots map[any]*slot
}

// slot is one key's value, made at most once.
type slot struct {
	once sync.Once
	v    any
}

// slotOf returns key's slot, adding an empty one if key has none.
func (r *Registry) slotOf(key any) *slot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.slots[key]
	if !ok {
		if r.slots == nil {
			r.slots = map[any]*slot{}
		}
		s = &slot{}
		r.slots[key] = s
	}
	return s
}

// Get returns the value kept under key, which mk makes at the first Get of
// key when Put did not put one. Concurrent first calls make it once; mk is
// called outside the registry's lock, so it may Get other keys. A nil value
// reads as T's zero value.
func Get[T any](r *Registry, key any, mk func() T) T {
	s := r.slotOf(key)
	s.once.Do(func() { s.v = mk() })
	v, _ := s.v.(T)
	return v
}

// Put keeps v under key in place of any value there: it is for the making
// of a client (a ConnectOption's value), before the client is shared, and
// the last Put of a key wins, as the last of two options does.
func Put[T any](r *Registry, key any, v T) {
	s := &slot{v: v}
	s.once.Do(func() {})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.slots == nil {
		r.slots = map[any]*slot{}
	}
	r.slots[key] = s
}
