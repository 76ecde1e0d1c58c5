package outbox_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/internal/redistest"
)

// The example program (examples/outbox, a module of its own) against a
// real PostgreSQL and redis-server: the committed order's receipt goes out
// once, the rolled-back order's job never exists.
func TestExample_TheCommittedOrdersReceiptGoesOutAndTheRolledBackOnesNever(t *testing.T) {
	t.Parallel()
	_, url := database(t)
	bin := filepath.Join(t.TempDir(), "outbox-example")
	if out, err := exec.Command("go", "build", "-C", "../examples/outbox", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(cmd.Environ(), "OUTBOX_URL="+url, "REDIS_URL="+redistest.Start(t).URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	want := "committed the order of ada@example.com, rolled back bob@example.com's\n" +
		"receipt of order 1 (4200 cents) sent to ada@example.com\n" +
		"the rolled-back order's job never existed\n"
	if string(out) != want {
		t.Fatalf("the example printed\n%s\nwant\n%s", out, want)
	}
	if strings.Contains(string(out), "bob@example.com (") {
		t.Fatal("the rolled-back order's receipt went out")
	}
}
