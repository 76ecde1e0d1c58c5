// Package model is the plain description of what bananagen generates: one
// Package per directory with tasks, one Task per annotated function. It holds
// no go/ast or go/types values, so the emitter can be tested from literals.
package model

import "time"

// Package is one Go package that gets a bananas_gen.go.
type Package struct {
	Name  string // package name
	Path  string // import path
	Dir   string // directory of its files
	Tasks []Task // in source order
}

// Task is one annotated function.
type Task struct {
	Func string // the annotated function: sendEmail
	Stub string // the generated variable: SendEmail
	Name string // wire name: send_email

	// Annotation values; zero means "not given" (the runtime default applies).
	Route      string
	Priority   string
	Retries    int
	HasRetries bool
	Timeout    time.Duration
	Unique     time.Duration
	ResultTTL  time.Duration
	Backoff    time.Duration // the first retry's delay, doubling after
	// KeepNothing: result_ttl=0, a success keeps no record (only a task
	// without a result may say so).
	KeepNothing bool

	Args   *Type // nil: the function takes no arguments (runtime.None)
	Result *Type // nil: the function returns only an error (runtime.None)

	// ArgsType is the args type as people read it; Fields lists its exported
	// fields when it is a struct (or a pointer to one).
	ArgsType string
	Fields   []Field
	// ResultType is the result type as people read it.
	ResultType string

	Cron *Cron // set for //bananas:cron functions

	// Flow control (//bananas:task only): the key of a job's args, and the
	// limits that hold per key (zero: none).
	Key        *Key
	MaxRunning int
	Rate       string // "N/s", "N/m" or "N/h"
	Burst      int

	// Batch handlers (//bananas:task batch=N): the function takes []A and
	// is handed up to Batch jobs at once, Linger after the first at the
	// latest (zero Batch: a single-job task).
	Batch      int
	Linger     time.Duration
	BatchShape BatchShape

	// Unique keys beyond unique= (each needs it): the fields of the args the
	// key is made of (none: all the args), until when it is held ("":
	// the runtime's default, ended), and the debounce (zero: none).
	UniqueBy    []string
	UniqueUntil string
	Debounce    time.Duration

	// Expire (expire=): a job that has not started this long after its
	// enqueue ends expired, never run (runtime.ExpireIn); zero: never.
	Expire time.Duration

	// OnBusy (on_busy=): what an enqueue does when its key is busy,
	// "cancel_running" or "drop"; "" (or wait) waits. Needs Key and
	// MaxRunning.
	OnBusy string

	Directive string // the directive line, quoted in the stub's comment
	Doc       string // the function's doc comment without the directive, carried to the stub ("" when none)
}

// Key is where a job's key is read from its args: a path of fields to a
// string, bool or integer leaf.
type Key struct {
	Path        string   // as written: Order.Shop
	ArgsPointer bool     // the args are a pointer to a struct: nil args, key ""
	Hops        []KeyHop // the fields from the args to the leaf, the leaf last
	Leaf        KeyLeaf
	// Exact: the leaf's type is string, bool, int64 or uint64 itself, and
	// needs no conversion before it is written as a string.
	Exact bool
}

// KeyHop is one field of a key's path.
type KeyHop struct {
	Name    string
	Pointer bool // a pointer to a struct: nil, key ""
}

// KeyLeaf is the kind of the field a key is read from.
type KeyLeaf int

const (
	KeyString KeyLeaf = iota
	KeyBool
	KeyInt
	KeyUint
)

// BatchShape is what a batch handler returns.
type BatchShape int

const (
	BatchError   BatchShape = iota // error: one error for the whole batch
	BatchErrors                    // []error: one entry per job
	BatchResults                   // ([]R, []error): a result and an error per job
)

// Cron is the schedule of a //bananas:cron function.
type Cron struct {
	Spec string
	TZ   string
}

// Field is one exported field of an args struct.
type Field struct {
	Name string
	JSON string // the JSON key when a json tag renames it
	Type string
}

// TypeKind says what a Type is.
type TypeKind int

const (
	Named   TypeKind = iota // Path.Name, or a predeclared type when Path is ""
	Pointer                 // *Elem
	Slice                   // []Elem
	Array                   // [Len]Elem
	Map                     // map[Key]Elem
)

// Type is a Go type expression to write in generated code.
type Type struct {
	Kind TypeKind
	Path string // Named: import path ("" for predeclared types)
	Name string // Named: type name
	Len  int64  // Array
	Key  *Type  // Map
	Elem *Type  // Pointer, Slice, Array, Map
}
