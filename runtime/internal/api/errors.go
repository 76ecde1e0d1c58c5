package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/access"
)

// onlyParams refuses a query parameter the endpoint does not take, or one
// given twice: a typo must not be silently ignored. A known name ending in
// a dot is a prefix ("args."): it takes every parameter named by it and more.
func onlyParams(r *http.Request, known ...string) error {
	for k, vs := range r.URL.Query() {
		ok := false
		for _, want := range known {
			ok = ok || k == want || (strings.HasSuffix(want, ".") && strings.HasPrefix(k, want))
		}
		if !ok {
			return BadRequest(k, "unknown query parameter %q (this endpoint takes: %s)", k, orNone(namesOf(known)))
		}
		if len(vs) > 1 {
			return BadRequest(k, "query parameter %q given %d times", k, len(vs))
		}
	}
	return nil
}

// namesOf are the parameter names as people read them: a prefix as
// "args.<field>".
func namesOf(known []string) []string {
	out := make([]string, len(known))
	for i, k := range known {
		out[i] = k
		if strings.HasSuffix(k, ".") {
			out[i] = k + "<field>"
		}
	}
	return out
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// bodyError names what is wrong with a JSON body.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("the body is over the limit of %d bytes", tooBig.Limit)}
	case errors.Is(err, io.EOF):
		return BadRequest("", "empty body: want a JSON object")
	case errors.As(err, &syntax):
		return BadRequest("", "the body is not JSON: %v (at byte %d)", err, syntax.Offset)
	case errors.As(err, &typ):
		return BadRequest(typ.Field, "field %q: want %s, got JSON %s", typ.Field, typ.Type, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return BadRequest(field, "unknown field %q (want name, args, route, priority, delay)", field)
	}
	return BadRequest("", "the body is not valid JSON: %v", err)
}

// Error is an answer other than success that the API decides itself: a
// status, a message for people and the field (body key or query parameter)
// it is about, when there is one.
type Error struct {
	Status int
	Msg    string
	Field  string
	// Role, on a 403 for a token whose role falls short, is the role needed.
	Role access.Role
}

func (e *Error) Error() string { return e.Msg }

// BadRequest is a 400 about field.
func BadRequest(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...), Field: field}
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error string      `json:"error"`
	Field string      `json:"field,omitempty"`
	Role  access.Role `json:"role,omitempty"`
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &e):
	case errors.As(err, &tooBig):
		e = &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("the body is over the limit of %d bytes", tooBig.Limit)}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the client left
	default:
		if down := admin.Unreachable(r.Context(), s.a, s.cfg.Redis, err); down != nil {
			// Not the server's fault, nor the caller's: worth sending again
			// once Redis is back, which Retry-After says.
			s.cfg.Logger.Warn("bananas: api request failed: Redis is unreachable", "method", r.Method, "path", r.URL.Path, "err", err)
			w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
			e = &Error{Status: http.StatusServiceUnavailable, Msg: down.Error()}
		} else if e = httpError(err); e.Status == http.StatusInternalServerError {
			s.cfg.Logger.Error("bananas: api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	_ = writeJSON(w, e.Status, errorBody{Error: e.Msg, Field: e.Field, Role: e.Role})
}

// RetryAfterSeconds is the Retry-After of a 503 answered while Redis is
// unreachable.
const RetryAfterSeconds = 5

// httpError is the answer to err, an error of the admin layer: its class's
// status and the field it names. A Failure is a 500 that says what failed
// (fail answers a 503 instead while Redis is unreachable).
func httpError(err error) *Error {
	p := admin.Classify(err)
	if p.Class == admin.Failure {
		return &Error{Status: http.StatusInternalServerError, Msg: err.Error()}
	}
	return &Error{Status: p.Class.HTTPStatus(), Msg: p.Msg, Field: p.Field}
}
