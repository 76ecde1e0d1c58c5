package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// `app schedules set|list|pause|resume|run|backfill|delete` act on
// schedules made at run time; bad input exits 2 naming what is wrong.
func TestCLI_Schedules(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": redistest.Shared(t).URL(), "BANANAS_NAMESPACE": redistest.Namespace(t), "LOG_LEVEL": "error"}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runtime.RunCommand(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut, testtasks.Register)
		return code, out.String(), errOut.String()
	}
	if code, out, errOut := run("schedules", "set", "echo:a", "t_echo", `{"Text":"a"}`, "--cron", "@every 1s", "--overlap", "allow", "--json"); code != 0 || !strings.Contains(out, `"cron": "@every 1s"`) {
		t.Fatalf("schedules set = %d %s %s", code, out, errOut)
	}
	code, out, errOut := run("schedules", "list", "--json")
	var list []bananastype.Schedule
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].ID != "echo:a" || compact(list[0].Args) != `{"Text":"a"}` {
		t.Fatalf("schedules list --json = %d %s %s", code, out, errOut)
	}
	if code, out, _ := run("schedules", "list"); code != 0 || !strings.Contains(out, "NEXT RUN") || !strings.Contains(out, "echo:a") {
		t.Fatalf("schedules list = %d %s", code, out)
	}
	for _, verb := range []string{"pause", "resume"} {
		if code, _, errOut := run("schedules", verb, "echo:a"); code != 0 {
			t.Fatalf("schedules %s = %d %s", verb, code, errOut)
		}
	}
	if code, out, errOut := run("schedules", "run", "echo:a"); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("schedules run = %d %q %s", code, out, errOut)
	}
	from := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	if code, out, errOut := run("schedules", "backfill", "echo:a", "--from", from.Format(time.RFC3339), "--to", from.Add(2*time.Second).Format(time.RFC3339)); code != 0 || len(strings.Fields(out)) != 3 {
		t.Fatalf("schedules backfill = %d %q %s; want three ids", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"schedules", "set", "x", "t_echo", `{"Text":5}`, "--cron", "@every 1s"}, "Text"},
		{[]string{"schedules", "set", "x", "t_echo", `{}`, "--cron", "often"}, "cron"},
		{[]string{"schedules", "set", "x", "t_echo", `{}`, "--cron", "@every 1s", "--overlap", "queue_all"}, "overlap"},
		{[]string{"schedules", "set", "x", "t_echo", `{`, "--cron", "@every 1s"}, "JSON"},
		{[]string{"schedules", "backfill", "echo:a", "--from", "yesterday", "--to", "now"}, "--from"},
		{[]string{"schedules", "frobnicate"}, "frobnicate"},
		{[]string{"schedules", "delete", "nope"}, "nope"},
	} {
		if code, _, errOut := run(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v = %d %s; want exit 2 naming %s", c.args, code, errOut, c.want)
		}
	}
	if code, _, errOut := run("schedules", "delete", "echo:a"); code != 0 {
		t.Fatalf("schedules delete = %d %s", code, errOut)
	}
	if code, out, _ := run("schedules", "list", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("schedules list after delete = %d %s", code, out)
	}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	_ = json.Compact(&b, raw)
	return b.String()
}

// A cron entry of the code is listed by `app schedules list` (source code),
// paused and resumed by `app schedules pause|resume`, and run by `app
// schedules run`; `set` or `delete` of it exits 2 saying it is changed in
// code.
func TestCLI_SchedulesOfACodeEntry(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": redistest.Shared(t).URL(), "BANANAS_NAMESPACE": redistest.Namespace(t), "LOG_LEVEL": "error"}
	register := func(w *runtime.Worker) {
		testtasks.Register(w)
		runtime.Schedule(w, testtasks.Tick, "0 0 1 1 *", "") // once a year: no tick during the test
	}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runtime.RunCommand(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut, register)
		return code, out.String(), errOut.String()
	}
	listed := func() bananastype.Schedule {
		t.Helper()
		code, out, errOut := run("schedules", "list", "--json")
		var list []bananastype.Schedule
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].ID != "t_tick" || list[0].Source != bananastype.SourceCode {
			t.Fatalf("schedules list --json = %d %s %s; want the code's entry t_tick", code, out, errOut)
		}
		return list[0]
	}
	if listed().Paused {
		t.Fatal("the code's entry is listed paused before any pause")
	}
	if code, _, errOut := run("schedules", "pause", "t_tick"); code != 0 {
		t.Fatalf("schedules pause t_tick = %d %s", code, errOut)
	}
	if !listed().Paused {
		t.Fatal("the code's entry is not listed paused after the pause")
	}
	if code, out, _ := run("schedules", "list"); code != 0 || !strings.Contains(out, "PAUSED") {
		t.Fatalf("schedules list = %d %s; want the entry PAUSED", code, out)
	}
	if code, _, errOut := run("schedules", "resume", "t_tick"); code != 0 || listed().Paused {
		t.Fatalf("schedules resume t_tick = %d %s; want it listed active", code, errOut)
	}
	if code, out, errOut := run("schedules", "run", "t_tick"); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("schedules run t_tick = %d %q %s", code, out, errOut)
	}
	for _, args := range [][]string{{"schedules", "delete", "t_tick"}, {"schedules", "set", "t_tick", "t_echo", `{}`, "--cron", "@every 1s"}} {
		if code, _, errOut := run(args...); code != 2 || !strings.Contains(errOut, "bananas:cron") {
			t.Errorf("%v = %d %s; want exit 2 saying it is a //bananas:cron entry", args, code, errOut)
		}
	}
}
