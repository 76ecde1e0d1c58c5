package admin_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// A job's JSON is the API's and --json's shape — snake_case keys, unset
// times null, durations in _ms keys, args and result as JSON, null when
// unknown — and reads back into the same job.
func TestJob_JSONIsTheOneShapeAndReadsBack(t *testing.T) {
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	j := admin.Job{ID: "01J.default", Name: "send_email", Route: "default", Priority: queue.High, Status: queue.StatusFailed,
		Attempts: 3, MaxRetries: 2, Error: "boom", Timeout: 1500 * time.Millisecond, CreatedAt: created,
		FailedAt: []time.Time{created.Add(time.Second)}, Args: json.RawMessage(`{"To":"a@b"}`)}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"task": "send_email", "status": "failed", "retries": 2.0, "timeout_ms": 1500.0,
		"created_at": "2026-11-26T10:00:00Z", "started_at": nil, "result": nil, "lease_deadline": nil} {
		if !reflect.DeepEqual(m[key], want) {
			t.Errorf("%s = %#v; want %#v (in %s)", key, m[key], want, b)
		}
	}
	var back admin.Job
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != j.ID || back.Name != j.Name || back.Timeout != j.Timeout || !back.CreatedAt.Equal(created) || !back.StartedAt.IsZero() ||
		len(back.FailedAt) != 1 || string(back.Args) != string(j.Args) || back.ResultJSON != nil {
		t.Fatalf("read back %+v; want %+v", back, j)
	}
}

// A page lists its jobs without their args and result, and an empty page
// lists [] (not null).
func TestJobPage_ListsSummaries(t *testing.T) {
	b, _ := json.Marshal(admin.JobPage{Jobs: []admin.Job{{ID: "x", Args: json.RawMessage(`{}`)}}})
	if s := string(b); strings.Contains(s, "args") || !strings.Contains(s, `"next":""`) {
		t.Fatalf("page = %s; want summaries without args and an empty next", s)
	}
	if b, _ := json.Marshal(admin.JobPage{Jobs: admin.Map([]admin.Job(nil), func(j admin.Job) admin.Job { return j })}); !strings.Contains(string(b), `"jobs":[]`) {
		t.Fatalf("empty page = %s; want jobs []", b)
	}
}

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
