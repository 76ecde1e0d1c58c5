package runtime_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// cliCommands are the commands that take free text and return on their own
// (worker, scheduler and api run until stopped).
var cliCommands = []string{"enqueue", "job", "jobs", "queues", "pause", "resume", "dlq", "cron", "workers", "no-such-command"}

// Whatever free text follows a command — ids, JSON args, routes, durations,
// search text, flags — the command line answers with a status of 0, 1 or 2,
// says why on stderr when it is not 0, and never panics or runs past its
// context.
func FuzzCLI_FreeTextGetsAStatusAndAReason(f *testing.F) {
	for _, seed := range []struct {
		cmd  uint8
		args string
	}{
		{0, "send_email\x00{\"To\":\"a@b.c\"}"}, {0, "send_email\x00{\"To\":1}"}, {0, "send_email\x00{}\x00--route\x00{bad}"},
		{0, "send_email\x00{}\x00--delay\x00-5s"}, {0, "nope\x00{}"}, {0, "send_email\x00{}\x00--priority\x00urgent"},
		{1, "01J00000000000000000000000.default"}, {1, "cancel\x00"}, {1, "delete\x00\xff\xfe"},
		{2, "--state\x00nope"}, {2, "--route\x00a b\x00--q\x00%00"}, {2, "--cursor\x00!!!"}, {2, "--limit\x00-1"},
		{4, "{}"}, {4, ""}, {6, "purge\x00--older-than\x00-1h\x00--yes"}, {6, "replay\x00--task\x00"}, {6, "list\x00--route\x00\x00"},
		{7, "list\x00--json"}, {9, "x"},
	} {
		f.Add(seed.cmd, seed.args)
	}
	url, ns := redistest.Shared(f).URL(), redistest.Namespace(f)
	env := map[string]string{"REDIS_URL": url, "BANANAS_NAMESPACE": ns, "LOG_LEVEL": "error"}
	f.Fuzz(func(t *testing.T, cmd uint8, rest string) {
		args := []string{cliCommands[int(cmd)%len(cliCommands)]}
		if rest != "" {
			args = append(args, strings.Split(rest, "\x00")...)
		}
		for _, a := range args {
			if a == "--wait" || strings.HasPrefix(a, "--wait=") {
				return // waits for a worker there is none of: bounded by the context, but slow
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var out, errOut bytes.Buffer
		began := time.Now()
		code := runtime.RunCommand(ctx, args, func(k string) string { return env[k] }, &out, &errOut, tasks.Register)
		if took := time.Since(began); took > 6*time.Second {
			t.Fatalf("%q took %s", args, took)
		}
		switch code {
		case 0:
		case 1, 2:
			if strings.TrimSpace(errOut.String()) == "" {
				t.Fatalf("%q exited %d saying nothing on stderr (stdout %q)", args, code, out.String())
			}
		default:
			t.Fatalf("%q exited %d; want 0, 1 or 2", args, code)
		}
	})
}
