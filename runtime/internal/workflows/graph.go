package workflows

import (
	"fmt"
	"regexp"

	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// MaxLabel is the longest label of a step.
const MaxLabel = 64

// label is what a step's label may be: short, and plain enough to read in
// a URL, a table and a log line as it is.
var label = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// StepSpec is one step of an untyped submission (the HTTP API's JSON): its
// label, and the labels of the steps it comes after, in the order their
// results are given to it.
type StepSpec struct {
	Label string
	After []string
}

// GraphError refuses a submission: Field names the input at fault
// ("steps[2].after"), Msg says what is wrong.
type GraphError struct {
	Field, Msg string
}

func (e *GraphError) Error() string { return e.Msg }

func refuse(field, format string, args ...any) error {
	return &GraphError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// CheckGraph checks the graph of an untyped submission: 1 to
// record.MaxSteps steps, each label plain (MaxLabel) and its own,
// each step after steps listed before it, each named once — so the graph
// has no cycle. It goes through the steps in order and, once a step's
// place in the graph is checked, calls check with its index and its
// predecessors' indices in the order its After names them: the seam where
// the caller checks what this package does not know (the step's task, its
// args, that it takes what its predecessors return). It stops at the first
// refusal, a *GraphError or check's error, so a submission's refusal is
// always about its first step at fault.
func CheckGraph(steps []StepSpec, check func(i int, after []int) error) error {
	switch n := len(steps); {
	case n == 0:
		return refuse("steps", "steps: empty: a workflow has 1 to %d steps, the last one's result being the workflow's", record.MaxSteps)
	case n > record.MaxSteps:
		return refuse("steps", "steps: %d steps, over the limit of %d", n, record.MaxSteps)
	}
	index := make(map[string]int, len(steps))
	for i, st := range steps {
		at := fmt.Sprintf("steps[%d]", i)
		if !label.MatchString(st.Label) {
			return refuse(at+".id", "%s.id %q: want 1 to %d letters, digits, '_', '-', '.' or ':', unique in the workflow", at, st.Label, MaxLabel)
		}
		if k, dup := index[st.Label]; dup {
			return refuse(at+".id", "%s.id %q: steps[%d] has that id already: each step's id is its own", at, st.Label, k)
		}
		after, err := predecessors(at, i, st, index, steps)
		if err != nil {
			return err
		}
		if err := check(i, after); err != nil {
			return err
		}
		index[st.Label] = i
	}
	return nil
}

// predecessors are the indices of the steps st comes after, each listed
// before it, in the order st names them.
func predecessors(at string, i int, st StepSpec, index map[string]int, all []StepSpec) ([]int, error) {
	var after []int
	seen := map[string]bool{}
	for _, l := range st.After {
		k, ok := index[l]
		switch {
		case seen[l]:
			return nil, refuse(at+".after", "step %q: after names %q twice", st.Label, l)
		case ok:
			seen[l] = true
			after = append(after, k)
			continue
		case l == st.Label:
			return nil, refuse(at+".after", "step %q comes after itself", st.Label)
		}
		for j := i + 1; j < len(all); j++ {
			if all[j].Label == l {
				return nil, refuse(at+".after", "step %q comes after %q, which is listed after it (steps[%d]): list each step after the steps it comes after", st.Label, l, j)
			}
		}
		return nil, refuse(at+".after", "step %q comes after %q: no step has that id", st.Label, l)
	}
	return after, nil
}
