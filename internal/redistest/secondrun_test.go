package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// errorsOf records what a SecondRun reports instead of failing the test.
type errorsOf struct {
	testing.TB
	errs []string
}

func (e *errorsOf) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// A script that writes the same again on its second run passes; one whose
// second run changes the namespace (a counter bumped twice) is reported
// with the key it changed.
func TestSecondRun_ReportsAScriptWhoseSecondRunChangesTheNamespace(t *testing.T) {
	rdb := Shared(t).Client(t)
	ns := Namespace(t)
	ctx := context.Background()
	rec := &errorsOf{TB: t}
	h := HookSecondRun(rec, rdb, ns)
	h.During(func() {
		if err := rdb.Eval(ctx, "redis.call('SET', KEYS[1], ARGV[1]) return 1", []string{ns + ":set"}, "v").Err(); err != nil {
			t.Fatal(err)
		}
	})
	if len(rec.errs) != 0 {
		t.Fatalf("a SET run twice was reported: %v", rec.errs)
	}
	h.During(func() {
		if err := rdb.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{ns + ":n"}).Err(); err != nil {
			t.Fatal(err)
		}
	})
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "changed: "+ns+":n") {
		t.Fatalf("an INCR run twice: reported %v; want the change of %s:n", rec.errs, ns)
	}
}
