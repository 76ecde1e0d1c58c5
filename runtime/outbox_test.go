package runtime_test

import (
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime"
)

// The core module has no outbox (package outbox is a module of its own), so
// this test binary is a program that does not import it: OUTBOX_URL is a
// usage error naming the import.
func TestMain_OutboxURLWithoutTheOutboxImportedIsAUsageErrorNamingTheImport(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": "mem://", "OUTBOX_URL": "postgres://app@127.0.0.1:5432/app"}
	var out, errOut strings.Builder
	code := runtime.RunCommand(ctxT(t), []string{"queues"}, func(k string) string { return env[k] }, &out, &errOut)
	if code != runtime.ExitUsage || !strings.Contains(errOut.String(), "github.com/bananas-go/bananas/outbox") {
		t.Fatalf("exit %d, stderr %q; want %d naming the import", code, errOut.String(), runtime.ExitUsage)
	}
}

// OUTBOX_URL must be a PostgreSQL URL: anything else exits 2 naming it.
func TestMain_OutboxURLThatIsNotPostgreSQLIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"redis://localhost:6379", "not a url", "postgres://"} {
		env := map[string]string{"REDIS_URL": "mem://", "OUTBOX_URL": bad}
		var out, errOut strings.Builder
		code := runtime.RunCommand(ctxT(t), []string{"queues"}, func(k string) string { return env[k] }, &out, &errOut)
		if code != runtime.ExitUsage || !strings.Contains(errOut.String(), "OUTBOX_URL") {
			t.Errorf("OUTBOX_URL=%q: exit %d, stderr %q; want %d naming OUTBOX_URL", bad, code, errOut.String(), runtime.ExitUsage)
		}
	}
}

// `app outbox` in a program without an outbox is a usage error naming
// OUTBOX_URL; `app queues` is the routes alone.
func TestCLI_OutboxWithoutOUTBOX_URLIsAUsageErrorNamingIt(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": "mem://"}
	for _, args := range [][]string{{"outbox"}, {"outbox", "--json"}} {
		var out, errOut strings.Builder
		code := runtime.RunCommand(ctxT(t), args, func(k string) string { return env[k] }, &out, &errOut)
		if code != runtime.ExitUsage || out.String() != "" || !strings.Contains(errOut.String(), "OUTBOX_URL") {
			t.Fatalf("app %v: exit %d, stdout %q, stderr %q; want exit 2 naming OUTBOX_URL", args, code, out.String(), errOut.String())
		}
	}
	var out, errOut strings.Builder
	if code := runtime.RunCommand(ctxT(t), []string{"queues"}, func(k string) string { return env[k] }, &out, &errOut); code != runtime.ExitOK || strings.Contains(out.String(), "outbox") {
		t.Fatalf("app queues: exit %d, stdout %q; want the routes without an outbox line", code, out.String())
	}
}
