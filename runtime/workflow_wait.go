package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// ErrTimeout is what a signal wait that got no signal within its timeout
// fails its workflow with: errors.Is(err, runtime.ErrTimeout) holds for
// the *WorkflowError Await returns, whose Step names the wait.
var ErrTimeout = errors.New("bananas: timed out")

// Sleep is a step that completes d after prev completed, with prev's
// result: Then(Sleep(prev, time.Hour), next) runs next an hour after prev.
// While it sleeps it holds no worker slot and no goroutine: it is a due
// time in the workflow's record, which the workflow keeper of any worker
// fires once, within a second of it, whatever crashed meanwhile. It is
// labelled "sleep" ("sleep-2", ... for further ones).
func Sleep[R any](prev Step[R], d time.Duration) Step[R] {
	n := &stepNode{wait: record.KindTimer, dur: max(d, 0), after: []*stepNode{prev.node}}
	if prev.node != nil {
		n.client = prev.node.client
	}
	return Step[R]{n}
}

// WaitSignal is a step that completes when a signal of that name reaches
// the workflow (Client.Signal, POST /api/v1/workflows/{id}/signals/{name},
// `app workflow signal ID NAME JSON`), with its payload as its result,
// decoded as T. It is armed when the workflow is submitted: a signal sent
// any time after that is taken, and one signal completes one wait. With a
// timeout over 0, a wait that got no signal by then fails the workflow
// with ErrTimeout (a retry arms it again, its timeout anew); 0 waits for
// ever. Like Sleep it holds no slot and no goroutine. It is labelled with
// its name (name-2, ... for further waits of that name).
func WaitSignal[T any](name string, timeout time.Duration) Step[T] {
	typ := reflect.TypeFor[T]()
	gotype := typeName(typ)
	signalDecoders.LoadOrStore(gotype, func(data []byte) ([]byte, error) {
		var v T
		if err := DecodeStrictJSON(data, &v); err != nil {
			return nil, err
		}
		return encodeSignal(v)
	})
	return Step[T]{&stepNode{wait: record.KindSignal, dur: max(timeout, 0), signal: name, gotype: gotype}}
}

// typeName names a Go type by its package path and name (its text for an
// unnamed one): what a wait checks a signal's payload against.
func typeName(t reflect.Type) string {
	if t.PkgPath() != "" && t.Name() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}

// signalDecoders maps the payload type of every WaitSignal this program
// made to its strict JSON decoder (to msgpack): the API and the CLI read a
// signal's JSON with it.
var signalDecoders sync.Map // type name -> func([]byte) ([]byte, error)

// Signal sends the signal name to workflow id, with payload: the first
// wait of that name armed (WaitSignal) completes with it as its result,
// and the steps after it start. A signal for a wait not reached yet is
// kept for it. payload must be of the wait's type T (a *T is taken too).
//
// Each call is one signal, sent once however often its script call is
// resent after a lost reply. An error matches ErrWorkflowNotFound (no such
// workflow), ErrNoSuchWait (it waits for no signal of that name),
// ErrWrongState (it ended, or every wait of that name has its signal), or
// names the type the wait takes.
//
// A signal declared once with NewSignal has its payload's type checked by
// the compiler instead (Signal.Send).
func (c *Client) Signal(ctx context.Context, id, name string, payload any) error {
	v := reflect.ValueOf(payload)
	for v.IsValid() && v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	gotype := ""
	if v.IsValid() {
		gotype = typeName(v.Type())
		payload = v.Interface()
	}
	return c.sendSignal(ctx, id, name, payload, gotype)
}

// sendSignal sends the signal name to workflow id with payload, of Go type
// gotype ("" unchecked).
func (c *Client) sendSignal(ctx context.Context, id, name string, payload any, gotype string) error {
	b, err := encodeSignal(payload)
	if err != nil {
		return fmt.Errorf("bananas: signal %s: encode payload: %w", name, err)
	}
	if err := checkPayload("payload of signal ", name, len(b), c.maxPayload); err != nil {
		return err
	}
	_, err = c.signal(ctx, id, name, b, gotype)
	return err
}

// encodeSignal is a signal's payload as msgpack, before the signal seals it
// for its workflow (Client.signal).
func encodeSignal(payload any) ([]byte, error) { return encode(payload) }

// Signal is a signal declared once with its payload type T and its name:
// its Wait is the step that waits for it, and Send sends it with a payload
// the compiler checks is a T, where Client.Signal takes any value and
// refuses a wrong one only when it is sent.
//
//	var Approved = runtime.NewSignal[tasks.Approval]("approval")
//	ship := runtime.Then(Approved.Wait(48*time.Hour), tasks.Ship) // Ship takes tasks.Approval
//	id, err := ship.Enqueue(ctx)
//	err = Approved.Send(ctx, id, tasks.Approval{By: "ana"})          // a tasks.Approval, or it does not compile
type Signal[T any] struct {
	name   string
	client *Client
}

// NewSignal declares the signal name of payload type T. It panics when
// name cannot be a signal's name (1 to 200 bytes of printable ASCII
// without spaces or commas): a declaration is the program's, not its
// input.
func NewSignal[T any](name string) *Signal[T] {
	if err := redisstore.CheckSignalName(name); err != nil {
		panic("bananas: NewSignal: " + err.Error())
	}
	return &Signal[T]{name: name}
}

// Name is the signal's name: the {name} of its API route and of
// `app workflow signal ID NAME JSON`.
func (s *Signal[T]) Name() string { return s.name }

// With returns the signal bound to client c, for its Send.
func (s *Signal[T]) With(c *Client) *Signal[T] { return &Signal[T]{name: s.name, client: c} }

// Wait is the step that waits for the signal: WaitSignal[T](s.Name(),
// timeout).
func (s *Signal[T]) Wait(timeout time.Duration) Step[T] {
	st := WaitSignal[T](s.name, timeout)
	st.node.client = s.client
	return st
}

// Send sends the signal to workflow id with payload, through the client
// of With or the default one; its errors are Client.Signal's.
func (s *Signal[T]) Send(ctx context.Context, id string, payload T) error {
	c := s.client
	if c == nil {
		if c = Default(); c == nil {
			return fmt.Errorf("bananas: signal %s has no client: call runtime.SetDefault(client) once at start, or use its With(client)", s.name)
		}
	}
	return c.sendSignal(ctx, id, s.name, payload, typeName(reflect.TypeFor[T]()))
}

// signal sends a signal whose payload is msgpack already, under a fresh
// signal id, and says whether it was kept for a wait not reached yet.
func (c *Client) signal(ctx context.Context, id, name string, payload []byte, gotype string) (kept bool, err error) {
	sig := ulid.MustNew(ulid.Timestamp(c.q.Now()), ulid.DefaultEntropy()).String()
	// Kept in the record as a wait's result, or as a signal kept for a
	// wait not reached yet: sealed for the workflow when the client has keys.
	payload, err = c.sealWorkflowValue(id, payload)
	if err != nil {
		return false, fmt.Errorf("bananas: signal %s: %w", name, err)
	}
	res, err := c.workflowRunner().Signal(ctx, id, name, sig, payload, gotype)
	return res.Kept, signalError(id, name, err)
}

// ErrNoSuchWait: the workflow waits for no signal of that name.
var ErrNoSuchWait = admin.ErrNoSuchWait

// signalError maps a store's refusal of a signal to the runtime's errors.
func signalError(id, name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, record.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrWorkflowNotFound, id)
	case errors.Is(err, record.ErrNoSuchWait):
		return fmt.Errorf("%w: workflow %s waits for no signal %q", ErrNoSuchWait, id, name)
	case errors.Is(err, record.ErrWorkflowEnded), errors.Is(err, record.ErrSignalsReceived):
		return fmt.Errorf("%w: %v", ErrWrongState, err)
	case errors.Is(err, record.ErrSignalType):
		return fmt.Errorf("bananas: payload: %w", badArgs{err})
	}
	return err
}

// SignalJSON sends the signal name to workflow id with a JSON payload: read
// by the strict decoder of the wait's type when this program knows it (it
// made a WaitSignal of that type, or declares a task whose args are of
// it), so that a field of the wrong name or type is an error matching
// ErrBadArgs that names it; otherwise taken as the JSON reads.
func (c *Client) SignalJSON(ctx context.Context, id, name string, data []byte) error {
	if !json.Valid(data) {
		return fmt.Errorf("bananas: signal %s: payload: %w", name, badArgs{errors.New("not valid JSON")})
	}
	gotype, err := c.waitType(ctx, id, name)
	if err != nil {
		return err
	}
	var payload []byte
	if dec := payloadDecoder(gotype); dec != nil {
		if payload, err = dec(data); err != nil {
			return fmt.Errorf("bananas: signal %s: payload: %w", name, badArgs{err})
		}
	} else {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("bananas: signal %s: payload: %w", name, badArgs{err})
		}
		if payload, err = encodeSignal(v); err != nil {
			return err
		}
		gotype = ""
	}
	if err := checkPayload("payload of signal ", name, len(payload), c.maxPayload); err != nil {
		return err
	}
	_, err = c.signal(ctx, id, name, payload, gotype)
	return err
}

// waitType is the payload type of workflow id's waits of that name; an
// error as Signal's for a workflow that has none.
func (c *Client) waitType(ctx context.Context, id, name string) (string, error) {
	if err := redisstore.CheckSignalName(name); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoSuchWait, err)
	}
	rec, err := redisstore.New(c.q).Read(ctx, id)
	if err != nil {
		return "", signalError(id, name, err)
	}
	for _, s := range rec.Steps {
		if s.Kind == record.KindSignal && s.Signal == name {
			return s.Type, nil
		}
	}
	return "", signalError(id, name, record.ErrNoSuchWait)
}

// payloadDecoder is the strict JSON decoder of payload type gotype: a
// WaitSignal's of this program, or a declared task's args'; nil when the
// program knows neither.
func payloadDecoder(gotype string) func([]byte) ([]byte, error) {
	if gotype == "" {
		return nil
	}
	if f, ok := signalDecoders.Load(gotype); ok {
		return f.(func([]byte) ([]byte, error))
	}
	var dec func([]byte) ([]byte, error)
	declaredTasks.Range(func(_, v any) bool {
		d := v.(*argsDecoder)
		if d.typ == nil || typeName(d.typ) != gotype {
			return true
		}
		typ := d.typ
		dec = func(data []byte) ([]byte, error) {
			p := reflect.New(typ)
			if err := DecodeStrictJSON(data, p.Interface()); err != nil {
				return nil, err
			}
			return encodeSignal(p.Elem().Interface())
		}
		return false
	})
	return dec
}
