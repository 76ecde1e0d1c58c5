package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRun_IndexesPerTenantInFewCallsAndEachCallerGetsItsOwnResult runs the
// example: every event is indexed in at most 20 calls of one tenant each,
// the refused event fails alone, and each Call gets its own square.
func TestRun_IndexesPerTenantInFewCallsAndEachCallerGetsItsOwnResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	m := regexp.MustCompile(`indexed in (\d+) bulk calls`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no count of bulk calls in:\n%s", text)
	}
	if n, _ := strconv.Atoi(m[1]); n > 22 { // 10 tenants' 1,000 events, plus the refused event's two runs
		t.Errorf("%d bulk calls, want at most 22:\n%s", n, text)
	}
	for _, want := range []string{"event 7 failed for good after 2 attempts, alone", "7² = 49, 19² = 361"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
}
