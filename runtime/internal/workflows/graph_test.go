package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// specs builds steps from "label:after1,after2" specs.
func specs(s ...string) []StepSpec {
	var out []StepSpec
	for _, x := range s {
		l, after, _ := strings.Cut(x, ":")
		st := StepSpec{Label: l}
		if after != "" {
			st.After = strings.Split(after, ",")
		}
		out = append(out, st)
	}
	return out
}

// A graph that cannot run is refused, naming the step and the field at
// fault, before any step's task is checked past it.
func TestCheckGraph_RefusesAGraphThatCannotRunNamingTheStep(t *testing.T) {
	for _, c := range []struct {
		name   string
		steps  []StepSpec
		field  string
		msg    string
		before int // how many steps were checked (the seam called) before the refusal
	}{
		{"empty", nil, "steps", "steps: empty", 0},
		{"a cycle", specs("a:b", "b:a"), "steps[0].after", `step "a" comes after "b", which is listed after it (steps[1])`, 0},
		{"a step after itself", specs("a", "b:b"), "steps[1].after", `step "b" comes after itself`, 1},
		{"an unknown label", specs("a", "b:nope"), "steps[1].after", `step "b" comes after "nope": no step has that id`, 1},
		{"a duplicate label", specs("a", "b", "a"), "steps[2].id", `steps[2].id "a": steps[0] has that id already`, 2},
		{"a predecessor named twice", specs("a", "b:a,a"), "steps[1].after", `step "b": after names "a" twice`, 1},
		{"an empty label", specs("a", ":a"), "steps[1].id", `steps[1].id "": want 1 to 64 letters`, 1},
		{"a label with a space", specs("a b"), "steps[0].id", `steps[0].id "a b"`, 0},
		{"a label too long", specs(strings.Repeat("x", MaxLabel+1)), "steps[0].id", "want 1 to 64", 0},
	} {
		checked := 0
		err := CheckGraph(c.steps, func(int, []int) error { checked++; return nil })
		var ge *GraphError
		if !errors.As(err, &ge) || ge.Field != c.field || !strings.Contains(ge.Msg, c.msg) {
			t.Errorf("%s: CheckGraph = %v; want a refusal of %s saying %q", c.name, err, c.field, c.msg)
		}
		if checked != c.before {
			t.Errorf("%s: %d steps checked before the refusal; want %d", c.name, checked, c.before)
		}
	}
}

// A graph over the step limit is refused naming the limit.
func TestCheckGraph_RefusesAGraphOverTheLimit(t *testing.T) {
	steps := make([]StepSpec, record.MaxSteps+1)
	for i := range steps {
		steps[i].Label = fmt.Sprint("s", i)
	}
	err := CheckGraph(steps, func(int, []int) error { return nil })
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint("over the limit of ", record.MaxSteps)) {
		t.Fatalf("CheckGraph of %d steps = %v; want a refusal naming the limit", len(steps), err)
	}
}

// Each step is handed to the caller's check with its predecessors in the
// order its after names them — the order of a gather's args — and labels
// may hold letters, digits, '_', '-', '.' and ':'.
func TestCheckGraph_GivesEachStepItsPredecessorsInTheOrderNamed(t *testing.T) {
	var got [][]int
	steps := append(specs("a", "b.2", "c_3:a", "D-4:c_3,b.2,a"), StepSpec{Label: "x:y", After: []string{"D-4"}})
	err := CheckGraph(steps, func(i int, after []int) error {
		if i != len(got) {
			t.Fatalf("step %d checked after %d steps; want in order", i, len(got))
		}
		got = append(got, after)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{nil, nil, {0}, {2, 1, 0}, {3}}
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Fatalf("predecessors %v; want %v", got, want)
	}
}

// The caller's refusal of a step stops the check there: the steps after it
// are not checked.
func TestCheckGraph_StopsAtTheCallersRefusal(t *testing.T) {
	bad := errors.New("no task named nope")
	n := 0
	err := CheckGraph(specs("a", "b", "c"), func(i int, _ []int) error {
		n++
		if i == 1 {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) || n != 2 {
		t.Fatalf("CheckGraph = %v after %d steps; want the caller's error after 2", err, n)
	}
}
