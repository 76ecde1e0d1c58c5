package admin

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors of the admin layer, matched with errors.Is. Their text starts with
// "bananas: ", which the surfaces drop (Message).
var (
	// ErrJobNotFound: no job of that id (never enqueued, its record
	// expired, or it completed keeping nothing: result_ttl=0).
	ErrJobNotFound = errors.New("bananas: job not found")
	// ErrDuplicate: an enqueue found its job already there (same chosen id,
	// or same args within a unique window).
	ErrDuplicate = errors.New("bananas: duplicate job")
	// ErrDebounced: an enqueue debounced the waiting job holding its unique
	// key, which took its args and due time (runtime.Debounce); it wraps
	// ErrDuplicate.
	ErrDebounced = fmt.Errorf("%w: debounced into the waiting job of its unique key", ErrDuplicate)
	// ErrUnknownTask: no task of that name is registered in this program.
	ErrUnknownTask = errors.New("bananas: unknown task")
	// ErrBadArgs: JSON args that the task's decoder refuses.
	ErrBadArgs = errors.New("bananas: bad args")
	// ErrBadQuery: a listing or action parameter that is not valid.
	ErrBadQuery = errors.New("bananas: bad query")
	// ErrPayloadTooLarge: args or a result over the payload limit.
	ErrPayloadTooLarge = errors.New("bananas: payload too large")
	// ErrWrongState: the job is not in a state the action applies to (a
	// delete of a running job); the message names its state.
	ErrWrongState = errors.New("bananas: job is in the wrong state")
	// ErrUnknownRoute: a route that no job, registered task or live worker
	// has; the message lists the known ones.
	ErrUnknownRoute = errors.New("bananas: unknown route")
	// ErrUnknownCron: no cron entry of that name is registered.
	ErrUnknownCron = errors.New("bananas: unknown cron entry")
)

// fieldError is an error about one input field, which the surfaces name
// (the API's "field", the CLI's flag); one made by InvalidValue also
// carries the value refused and the reason, for a surface to say them its
// own way (the CLI as `--priority urgent: ...`).
type fieldError struct {
	field         string
	err           error
	value, reason string
}

func (e *fieldError) Error() string { return e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// BadQuery is an error matching ErrBadQuery about the parameter field.
func BadQuery(field, format string, args ...any) error {
	return &fieldError{field: field, err: fmt.Errorf("%w: "+format, append([]any{ErrBadQuery}, args...)...)}
}

// Invalid is an error matching ErrBadQuery about input field whose text is
// the message as given, without a prefix: "priority \"urgent\": use high,
// normal or low".
func Invalid(field, format string, args ...any) error {
	return &fieldError{field: field, err: invalid(fmt.Sprintf(format, args...))}
}

// InvalidValue is an error matching ErrBadQuery about input field, whose
// value was refused for reason: its text is `priority "urgent": use high,
// normal or low`, or `route: invalid route "a b": ...` when value is empty
// (the reason names it). Classify reports the value and the reason apart.
func InvalidValue(field, value, reason string) error {
	msg := field
	if value != "" {
		msg += " " + strconv.Quote(value)
	}
	return &fieldError{field: field, err: invalid(msg + ": " + reason), value: value, reason: reason}
}

type invalid string

func (e invalid) Error() string        { return string(e) }
func (e invalid) Is(target error) bool { return target == ErrBadQuery }

// OnField marks err as being about input field (an error matching
// ErrBadArgs is about "args"); Classify reports it.
func OnField(field string, err error) error {
	if err == nil {
		return nil
	}
	return &fieldError{field: field, err: err}
}

// Class is how a surface treats an error: the HTTP status, the CLI's exit
// status, the dashboard's flash.
type Class int

const (
	// Failure: the server or Redis failed; not the caller's doing (500, exit 1).
	Failure Class = iota
	// BadInput: the request is wrong, and Field says where (400, exit 2).
	BadInput
	// NotFound: the job, route or cron entry named does not exist (404).
	NotFound
	// Conflict: the thing exists but is not in a state the action applies
	// to, or is already there (409).
	Conflict
	// TooLarge: a payload over the limit (413).
	TooLarge
)

// HTTPStatus is the class's status in the HTTP API and the dashboard.
func (c Class) HTTPStatus() int {
	switch c {
	case BadInput:
		return 400
	case NotFound:
		return 404
	case Conflict:
		return 409
	case TooLarge:
		return 413
	}
	return 500 // Failure: the server's or Redis's
}

// Problem is an error classed for a surface.
type Problem struct {
	Class Class
	Field string // the input field at fault, when known
	Msg   string // the error's text without the "bananas: " prefix
	// Value and Reason are the value of Field refused and why, without the
	// field or the value, when the error says them apart (InvalidValue);
	// Reason is empty otherwise, and Value when the reason names it.
	Value, Reason string
}

// Classify classes err, an error of the admin layer (nil is not an error:
// do not pass it). Errors it does not know are Failures.
func Classify(err error) Problem {
	p := Problem{Class: Failure, Msg: Message(err)}
	var fe *fieldError
	if errors.As(err, &fe) {
		p.Field, p.Value, p.Reason = fe.field, fe.value, fe.reason
	}
	switch {
	case errors.Is(err, ErrJobNotFound), errors.Is(err, ErrWorkflowNotFound), errors.Is(err, ErrNoHistory):
		p.Class = NotFound
	case errors.Is(err, ErrNoSuchWait):
		p.Class, p.Field = NotFound, or(p.Field, "name")
	case errors.Is(err, ErrUnknownSchedule):
		p.Class, p.Field = NotFound, or(p.Field, "id")
	case errors.Is(err, ErrUnknownRoute):
		p.Class, p.Field = NotFound, or(p.Field, "route")
	case errors.Is(err, ErrUnknownCron):
		p.Class, p.Field = NotFound, or(p.Field, "name")
	case errors.Is(err, ErrWrongState), errors.Is(err, ErrDuplicate), errors.Is(err, ErrCodeSchedule):
		p.Class = Conflict
	case errors.Is(err, ErrKeyBusy):
		p.Class, p.Field = Conflict, or(p.Field, "key")
	case errors.Is(err, ErrPayloadTooLarge):
		p.Class, p.Field = TooLarge, or(p.Field, "args")
	case errors.Is(err, ErrBadArgs):
		p.Class, p.Field = BadInput, or(p.Field, "args")
	case errors.Is(err, ErrUnknownTask):
		p.Class, p.Field = BadInput, or(p.Field, "name")
	case errors.Is(err, ErrBadQuery):
		p.Class = BadInput
	}
	return p
}

func or(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// Message is err's text without the "bananas: " prefix that the runtime's
// errors carry: whoever reads it knows where it came from.
func Message(err error) string {
	msg := err.Error()
	for len(msg) > 9 && msg[:9] == "bananas: " {
		msg = msg[9:]
	}
	return msg
}

// ErrKeyBusy: an enqueue of a keyed task with on_busy=drop found its key
// busy (its task's max running reached by the key's running and waiting
// jobs); the job was not enqueued. The message names the key.
var ErrKeyBusy = errors.New("bananas: key busy")
