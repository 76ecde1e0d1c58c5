package bananas_test

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// The add-ons are modules of their own (otelbananas, history/postgres,
// outbox) so that the core module requires what runtime needs and no more:
// a program that imports none downloads and links neither OpenTelemetry nor a
// PostgreSQL driver. A core package that imports one of them, or a test
// here that does, puts it back in go.mod; this says where it belongs.
func TestCoreModule_RequiresNeitherOpenTelemetryNorAPostgreSQLDriver(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		for _, addOn := range []struct{ prefix, module string }{
			{"go.opentelemetry.io/", "otelbananas"},
			{"github.com/jackc/", "history/postgres or outbox"},
		} {
			if strings.HasPrefix(r.Mod.Path, addOn.prefix) {
				t.Errorf("the core go.mod requires %s %s; what needs it belongs in the module %s (README, \"Add-ons\")", r.Mod.Path, r.Mod.Version, addOn.module)
			}
		}
	}
}
