package runtime_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program built with -tags bananas_nomem links neither miniredis nor its
// Lua interpreter, and refuses mem:// saying which tag left it out; the
// default build keeps mem:// (make demo, the examples, the tests rely on it).
func TestBuildTagNomem_LeavesTheEmbeddedServerOutAndSaysSo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a program")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "routing")
	build := exec.Command("go", "build", "-tags", "bananas_nomem", "-o", bin, "github.com/bananas-go/bananas/examples/routing")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags bananas_nomem: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, mods)
	}
	for _, dep := range []string{"alicebob/miniredis", "yuin/gopher-lua"} {
		if strings.Contains(string(mods), dep) {
			t.Errorf("a bananas_nomem build links %s:\n%s", dep, mods)
		}
	}

	run := exec.Command(bin, "queues")
	run.Env = append(os.Environ(), "POOL=x", "REDIS_URL=mem://")
	out, err := run.CombinedOutput()
	if err == nil {
		t.Fatalf("queues on mem:// in a bananas_nomem build succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "bananas_nomem") || !strings.Contains(string(out), "mem://") {
		t.Errorf("the refusal does not say that mem:// was left out by bananas_nomem:\n%s", out)
	}
}
