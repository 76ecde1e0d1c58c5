package scheduler_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/scheduler"
)

// A run of failures is one line when it starts and one when it ends, per
// key: a loop failing on every pass of an outage does not flood the log.
func TestOutageLog_SaysAnOutageOnceWhenItStartsAndOnceWhenItEnds(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	o := scheduler.NewOutageLog(slog.New(slog.NewTextHandler(&logs, nil)), "promoter")
	down := errors.New("dial tcp: connection refused")
	for range 50 {
		o.Failed("a", down)
		o.Failed("b", down)
		o.OK("c")
	}
	o.OK("a")
	o.OK("a")
	out := logs.String()
	if starts, ends := strings.Count(out, "outage: promoter failing"), strings.Count(out, "outage over: promoter works again"); starts != 2 || ends != 1 {
		t.Fatalf("%d starts and %d ends; want 2 (a and b) and 1 (a):\n%s", starts, ends, out)
	}
	if !strings.Contains(out, "route=a") || !strings.Contains(out, "failures=50") || !strings.Contains(out, "connection refused") {
		t.Fatalf("the lines lack the route, the count of failures or the error:\n%s", out)
	}
}
