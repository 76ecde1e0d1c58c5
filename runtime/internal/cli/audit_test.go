package cli

import (
	"strings"
	"testing"
)

// An action of the command line is recorded once, by cli@<host>; a listing
// is not recorded at all; `audit` prints the log.
func TestAudit_EachCommandLineActionIsRecordedOnceByCLIAtHost(t *testing.T) {
	f := &fakeAdmin{}
	app := &fakeApp{admin: f}
	if code, out, errOut := run(t, app, "pause", "emails"); code != ExitOK {
		t.Fatalf("pause: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := run(t, app, "queues"); code != ExitOK {
		t.Fatal("queues failed: " + errOut)
	}
	if len(f.audits) != 1 {
		t.Fatalf("recorded %+v; want one entry", f.audits)
	}
	e := f.audits[0]
	if !strings.HasPrefix(e.Who, "cli@") || e.Via != "cli" || e.What != "pauseRoute" || e.Target != "emails" || e.Outcome != "ok" {
		t.Fatalf("entry %+v", e)
	}
	code, out, _ := run(t, app, "audit")
	if code != ExitOK || !strings.Contains(out, "pauseRoute") || !strings.Contains(out, e.Who) {
		t.Fatalf("audit: %d\n%s", code, out)
	}
	if code, out, _ := run(t, app, "audit", "--json"); code != ExitOK || !strings.Contains(out, `"what": "pauseRoute"`) {
		t.Fatalf("audit --json: %d\n%s", code, out)
	}
	if len(f.audits) != 1 {
		t.Fatalf("reading the log recorded %+v", f.audits[1:])
	}
}
