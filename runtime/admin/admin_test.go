package admin_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bananas-go/bananas/runtime/admin"
)

// Every error of the admin layer has one class and, where the input is at
// fault, the field: what the API's status, the CLI's exit status and the
// dashboard's flash all follow.
func TestClassify_EachErrorHasItsClassAndField(t *testing.T) {
	for _, c := range []struct {
		err   error
		class admin.Class
		field string
		msg   string
	}{
		{fmt.Errorf("%w: 01J.default", admin.ErrJobNotFound), admin.NotFound, "", "job not found: 01J.default"},
		{fmt.Errorf("%w: 01W", admin.ErrWorkflowNotFound), admin.NotFound, "", "workflow not found: 01W"},
		{fmt.Errorf("%w: biling (known: billing)", admin.ErrUnknownRoute), admin.NotFound, "route", "unknown route: biling (known: billing)"},
		{fmt.Errorf("%w: nightly", admin.ErrUnknownCron), admin.NotFound, "name", "unknown cron entry: nightly"},
		{fmt.Errorf("%w: cannot delete job x: it is processing", admin.ErrWrongState), admin.Conflict, "", "job is in the wrong state: cannot delete job x: it is processing"},
		{admin.ErrDuplicate, admin.Conflict, "", "duplicate job"},
		{fmt.Errorf("bananas: args of t: %w", admin.ErrBadArgs), admin.BadInput, "args", "args of t: bananas: bad args"},
		{admin.ErrPayloadTooLarge, admin.TooLarge, "args", "payload too large"},
		{fmt.Errorf("%w: no task named %q", admin.ErrUnknownTask, "x"), admin.BadInput, "name", `unknown task: no task named "x"`},
		{admin.BadQuery("limit", "limit %d: want 1 to 500", 0), admin.BadInput, "limit", "bad query: limit 0: want 1 to 500"},
		{admin.Invalid("priority", "priority %q: use high, normal or low", "urgent"), admin.BadInput, "priority", `priority "urgent": use high, normal or low`},
		{errors.New("dial tcp: connection refused"), admin.Failure, "", "dial tcp: connection refused"},
	} {
		p := admin.Classify(c.err)
		if p.Class != c.class || p.Field != c.field || p.Msg != c.msg {
			t.Errorf("Classify(%v) = %+v; want class %d, field %q, message %q", c.err, p, c.class, c.field, c.msg)
		}
	}
}

// A value refused for a field is said whole in the error's text, and apart
// (the value, the reason) to a surface that says it its own way, as the CLI
// does with its flags.
func TestInvalidValue_CarriesTheValueAndTheReasonApart(t *testing.T) {
	for _, c := range []struct {
		err                error
		msg, value, reason string
	}{
		{admin.InvalidValue("priority", "urgent", "use high, normal or low"), `priority "urgent": use high, normal or low`, "urgent", "use high, normal or low"},
		{admin.InvalidValue("route", "", `invalid route "a b": a route is 1-64 characters`), `route: invalid route "a b": a route is 1-64 characters`, "", `invalid route "a b": a route is 1-64 characters`},
	} {
		p := admin.Classify(fmt.Errorf("bananas: %w", c.err))
		if p.Class != admin.BadInput || p.Msg != c.msg || p.Value != c.value || p.Reason != c.reason {
			t.Errorf("Classify(%v) = %+v; want bad input %q, value %q, reason %q", c.err, p, c.msg, c.value, c.reason)
		}
	}
}
