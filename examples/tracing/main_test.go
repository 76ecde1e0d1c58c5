package main

import (
	"regexp"
	"strings"
	"testing"
)

// The example's trace is what docs/TRACING.md shows: the request, its send
// span, and under it two failed runs and the third that completed, each
// linked to the send span.
func TestTracing_OneTraceFromTheRequestThroughTwoRetries(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	send := regexp.MustCompile(`send payments \[producer\] span ([0-9a-f]{16})`).FindStringSubmatch(got)
	if send == nil || !strings.Contains(got, "POST /checkout -> {OrderID:o-42 Attempt:3}") {
		t.Fatalf("output:\n%s\nwant the receipt of attempt 3 and a send span", got)
	}
	runs := regexp.MustCompile(`\n    process payments \[consumer\] span [0-9a-f]{16} link→`+send[1]+`, .*, (ok|error: .*)\n`).FindAllStringSubmatch(got, -1)
	if len(runs) != 3 || runs[0][1] == "ok" || runs[1][1] == "ok" || runs[2][1] != "ok" {
		t.Fatalf("output:\n%s\nwant three runs under the send span, linked to it: two failed, then one ok", got)
	}
}
