package runtime_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	quickstart "github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// pascalCase is a component name as a reader of the document expects one:
// words run together, each starting upper-case, no separators.
var pascalCase = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// Every component schema of the served document is named as a user reads
// it (JobSummary, StatsPoint): PascalCase, never a Go type's internal name
// (jobSummaryJSON, pointJSON).
func TestOpenAPI_ComponentNamesArePascalCaseWithoutGoInternals(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	doc, err := runtime.NewInspector(c, testtasks.Register, quickstart.Register).OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var bad []string
	for name := range d.Components.Schemas {
		if !pascalCase.MatchString(name) || regexp.MustCompile(`JSON\d*$`).MatchString(name) {
			bad = append(bad, name)
		}
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		t.Errorf("component names a user would not read as names: %q", bad)
	}
	for _, want := range []string{"Job", "JobSummary", "JobPage", "Queue", "Task", "Schedule", "Worker", "Stats", "StatsPoint", "Error", "Submission"} {
		if _, ok := d.Components.Schemas[want]; !ok {
			t.Errorf("no component %s; the document has %q", want, slices.Sorted(mapsKeys(d.Components.Schemas)))
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
