package record

import (
	"strings"
	"testing"
)

// A workflow id is its record's hash tag: one with a brace would put the
// record on another slot than its id names, one with a space could not be
// typed at the CLI; both are refused, naming the id, as are empty and
// overlong ones.
func TestCheckID_RefusesAnIDThatCannotBeAHashTag(t *testing.T) {
	for _, ok := range []string{"wf-1", "a", strings.Repeat("x", 200), "01J:route:x"} {
		if err := CheckID(ok); err != nil {
			t.Errorf("CheckID(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "a{b", "a}b", "a b", "a\tb", "a\nb", strings.Repeat("x", 201)} {
		if err := CheckID(bad); err == nil || !strings.Contains(err.Error(), "invalid workflow id") {
			t.Errorf("CheckID(%q) = %v; want refused", bad, err)
		}
	}
}

// A trail is joined with its siblings' by commas (ReadyStep.After): one
// with a comma, a control byte or over MaxTrail bytes is refused, naming
// what is wrong; a W3C traceparent passes.
func TestCheckTrail_RefusesATrailThatWouldBreakTheList(t *testing.T) {
	if err := CheckTrail("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); err != nil {
		t.Fatalf("a traceparent: %v", err)
	}
	if err := CheckTrail(""); err != nil {
		t.Fatalf("no trail: %v", err)
	}
	for bad, want := range map[string]string{
		"a,b":                           "0x2c at 1",
		"a\nb":                          "0xa at 1",
		"\x7f":                          "0x7f at 0",
		strings.Repeat("x", MaxTrail+1): "129 bytes",
	} {
		if err := CheckTrail(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckTrail(%q) = %v; want an error with %q", bad, err, want)
		}
	}
}

// runtime's docs of Job.After and LeaveTrail state these bounds in
// numbers, since the constants are internal.
func TestBounds_AsRuntimeDocumentsThem(t *testing.T) {
	if MaxAfterTrails != 8 || MaxTrail != 128 {
		t.Fatalf("MaxAfterTrails %d, MaxTrail %d: update runtime/job.go's docs of After and LeaveTrail", MaxAfterTrails, MaxTrail)
	}
}
