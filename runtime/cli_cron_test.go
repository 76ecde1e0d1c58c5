package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	crontasks "github.com/bananas-go/bananas/examples/cron/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// `cron list` shows the registered entries with their state once a scheduler
// has fired them: last run, next run, run count.
func TestCLI_CronListShowsState(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": redistest.Shared(t).URL(), "BANANAS_NAMESPACE": redistest.Namespace(t), "LOG_LEVEL": "error"}
	entries := cronFires(t, env)
	for _, e := range entries {
		switch e.Name {
		case "tick":
			if e.Spec != "@every 2s" || e.LastRun.IsZero() || !e.NextRun.After(e.LastRun) || e.LastJob == "" {
				t.Fatalf("tick = %+v; want last_run, a later next_run and its last job", e)
			}
		case "nightly_report":
			if e.TZ != "Europe/Berlin" || e.Route != "reports" || e.RunCount != 0 || e.NextRun.In(mustZone(t, "Europe/Berlin")).Hour() != 3 {
				t.Fatalf("nightly_report = %+v; want next run at 03:00 Berlin, never run", e)
			}
		default:
			t.Fatalf("unexpected entry %+v", e)
		}
	}
	var out bytes.Buffer
	code := runtime.RunCommand(context.Background(), []string{"cron", "list"}, func(k string) string { return env[k] }, &out, io.Discard, crontasks.Register)
	if table := out.String(); code != 0 || !strings.Contains(table, "NEXT RUN") || !strings.Contains(table, "nightly_report") || !strings.Contains(table, "Europe/Berlin") {
		t.Fatalf("cron list table = %d:\n%s", code, table)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// cronFires runs the scheduler of the cron example with env until its
// every-2s entry has fired, as `cron list --json` shows, and returns the
// entries that showed it.
func cronFires(t *testing.T, env map[string]string) []bananastype.Schedule {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	run := func(ctx context.Context, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runtime.RunCommand(ctx, args, getenv, &out, &errOut, crontasks.Register)
		return code, out.String(), errOut.String()
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { code, _, _ := run(sctx, "scheduler"); done <- code }()
	defer func() {
		stop()
		if code := recv(t, done, 30*time.Second, "the scheduler to stop"); code != 0 {
			t.Errorf("scheduler exited %d", code)
		}
	}()
	var entries []bananastype.Schedule
	waitFor(t, 15*time.Second, "the @every 2s entry to fire", func() bool {
		code, out, errOut := run(context.Background(), "cron", "list", "--json")
		if code != 0 {
			t.Fatalf("cron list --json = %d %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name == "tick" && e.RunCount > 0 {
				return true
			}
		}
		return false
	})
	return entries
}
