package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// A workflow submitted as JSON (POST /api/v1/workflows) is checked here as
// the compiler checks one built with Then and Gather: each step's task is
// registered, a first step's args go through its task's strict decoder,
// and a step takes what its predecessors return — the one predecessor's
// result type, or []R for several that each return R. Then its steps are
// the same untyped nodes the typed calls build, submitted the same way.

// stepNodeJSON is a step of t for a JSON submission: a first step with args
// read by t's strict decoder, or one whose args are its predecessors'
// results, with t's defaults as Step and Then give them.
func (t *Task[A, R]) stepNodeJSON(args []byte, first bool) (*stepNode, error) {
	if !first {
		return t.stepNode(nil), nil
	}
	a, err := t.decodeArgsJSON(args)
	if err != nil {
		return nil, err
	}
	return t.Step(a).node, nil
}

// workflowLabel is what a step's id may be: short, and plain enough to read
// in a URL, a table and a log line as it is.
var workflowLabel = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// SubmitWorkflow checks s and submits it whole (see admin.Admin); a refusal
// names the step at fault ("steps[2].after").
func (in *inspector) SubmitWorkflow(ctx context.Context, s admin.WorkflowSubmission) (string, map[string]string, error) {
	nodes, err := in.workflowNodes(s)
	if err != nil {
		return "", nil, err
	}
	id, steps, err := in.c.submitWorkflow(ctx, nodes)
	if err != nil {
		return "", nil, err
	}
	jobs := make(map[string]string, len(steps))
	for _, st := range steps {
		jobs[st.Label] = st.JobID
	}
	return id, jobs, nil
}

// jsonStep is a step of a submission being checked: its task's handler and
// its node.
type jsonStep struct {
	label string
	h     *handler
	node  *stepNode
}

// workflowNodes checks every step of s, in order, and returns their nodes.
func (in *inspector) workflowNodes(s admin.WorkflowSubmission) ([]*stepNode, error) {
	switch n := len(s.Steps); {
	case n == 0:
		return nil, admin.Invalid("steps", "steps: empty: a workflow has 1 to %d steps, the last one's result being the workflow's", queue.MaxWorkflowSteps)
	case n > queue.MaxWorkflowSteps:
		return nil, admin.Invalid("steps", "steps: %d steps, over the limit of %d", n, queue.MaxWorkflowSteps)
	}
	index := make(map[string]int, len(s.Steps))
	done := make([]jsonStep, len(s.Steps))
	nodes := make([]*stepNode, len(s.Steps))
	for i, st := range s.Steps {
		at := fmt.Sprintf("steps[%d]", i)
		if !workflowLabel.MatchString(st.ID) {
			return nil, admin.Invalid(at+".id", "%s.id %q: want 1 to %d letters, digits, '_', '-', '.' or ':', unique in the workflow", at, st.ID, admin.MaxWorkflowLabel)
		}
		if k, dup := index[st.ID]; dup {
			return nil, admin.Invalid(at+".id", "%s.id %q: steps[%d] has that id already: each step's id is its own", at, st.ID, k)
		}
		preds, err := in.stepPredecessors(at, i, st, index, done, s.Steps)
		if err != nil {
			return nil, err
		}
		step, err := in.checkStep(at, st, preds)
		if err != nil {
			return nil, err
		}
		index[st.ID], done[i], nodes[i] = i, step, step.node
	}
	return nodes, nil
}

// stepPredecessors are the steps st comes after, each listed before it.
func (in *inspector) stepPredecessors(at string, i int, st admin.WorkflowStepSubmission, index map[string]int, done []jsonStep, all []admin.WorkflowStepSubmission) ([]jsonStep, error) {
	var preds []jsonStep
	seen := map[string]bool{}
	for _, label := range st.After {
		k, ok := index[label]
		switch {
		case seen[label]:
			return nil, admin.Invalid(at+".after", "step %q: after names %q twice", st.ID, label)
		case ok:
			seen[label] = true
			preds = append(preds, done[k])
			continue
		case label == st.ID:
			return nil, admin.Invalid(at+".after", "step %q comes after itself", st.ID)
		}
		for j := i + 1; j < len(all); j++ {
			if all[j].ID == label {
				return nil, admin.Invalid(at+".after", "step %q comes after %q, which is listed after it (steps[%d]): list each step after the steps it comes after", st.ID, label, j)
			}
		}
		return nil, admin.Invalid(at+".after", "step %q comes after %q: no step has that id", st.ID, label)
	}
	return preds, nil
}

// checkStep checks one step — its task, its args or its predecessors'
// results, its task's options — and builds its node.
func (in *inspector) checkStep(at string, st admin.WorkflowStepSubmission, preds []jsonStep) (jsonStep, error) {
	h := in.reg.handlers[st.Name]
	if h == nil {
		return jsonStep{}, admin.OnField(at+".name", fmt.Errorf("%w: step %q: no task named %q (registered: %s)", ErrUnknownTask, st.ID, st.Name, strings.Join(in.reg.Tasks(), ", ")))
	}
	first := len(preds) == 0
	if !first && st.Args != nil {
		return jsonStep{}, admin.Invalid(at+".args", "step %q has args and after: a step takes args (a first step) or the results of the steps it comes after, not both", st.ID)
	}
	if err := stepTypes(at, st, h, preds); err != nil {
		return jsonStep{}, err
	}
	n, err := h.stepJSON(in.c, st.Args, first)
	switch {
	case errors.Is(err, ErrBadArgs):
		return jsonStep{}, admin.Invalid(at+".args", "step %q: %s", st.ID, admin.Message(err))
	case err != nil:
		return jsonStep{}, admin.Invalid(at, "step %q: %s", st.ID, admin.Message(err))
	case n.argErr != nil:
		return jsonStep{}, admin.Invalid(at+".args", "step %q: encode args: %v", st.ID, n.argErr)
	}
	if err := checkPayload("args of step ", st.ID, len(n.args), in.c.maxPayload); err != nil {
		return jsonStep{}, admin.OnField(at+".args", err)
	}
	if err := stepOptions(at, st, n, in.c); err != nil {
		return jsonStep{}, err
	}
	n.label = st.ID
	for _, p := range preds {
		n.after = append(n.after, p.node)
	}
	return jsonStep{label: st.ID, h: h, node: n}, nil
}

// stepOptions refuses a step whose task's defaults do not apply to a
// workflow's step (the enqueue would refuse them the same way, later).
func stepOptions(at string, st admin.WorkflowStepSubmission, n *stepNode, c *Client) error {
	cfg, err := n.cfg(c)
	if err == nil {
		err = checkStepConfig(cfg)
	}
	if err != nil {
		return admin.Invalid(at+".name", "step %q: task %s's defaults: %s", st.ID, st.Name, admin.Message(err))
	}
	return nil
}

var noneType = reflect.TypeFor[None]()

// resultTypeOf is the Go type of h's task's result: None when it has none.
func resultTypeOf(h *handler) reflect.Type {
	if h.resultType == nil {
		return noneType
	}
	return h.resultType
}

// stepTypes refuses a step that does not take what its predecessors
// return: one predecessor's result type must be its args type; several
// predecessors must each return R, and it take []R.
func stepTypes(at string, st admin.WorkflowStepSubmission, h *handler, preds []jsonStep) error {
	want := h.argsType
	switch {
	case len(preds) == 0:
		return nil
	case len(preds) == 1:
		p := preds[0]
		if got := resultTypeOf(p.h); got != want {
			return admin.Invalid(at+".after", "step %q (%s) takes %s, but step %q (%s), which it comes after, returns %s",
				st.ID, st.Name, want, p.label, p.h.name, got)
		}
		return nil
	case want.Kind() != reflect.Slice:
		return admin.Invalid(at+".after", "step %q (%s) comes after %d steps and runs with the list of their results, but it takes %s, not a list",
			st.ID, st.Name, len(preds), want)
	}
	for _, p := range preds {
		if got := resultTypeOf(p.h); got != want.Elem() {
			return admin.Invalid(at+".after", "step %q (%s) takes %s, a list of %s, but step %q (%s), which it comes after, returns %s",
				st.ID, st.Name, want, want.Elem(), p.label, p.h.name, got)
		}
	}
	return nil
}
