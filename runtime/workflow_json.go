package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// A workflow submitted as JSON (POST /api/v1/workflows) is checked here as
// the compiler checks one built with Then and Gather: each step's task is
// registered, a first step's args go through its task's strict decoder,
// and a step takes what its predecessors return — the one predecessor's
// result type, or []R for several that each return R. Then its steps are
// the same untyped nodes the typed calls build, submitted the same way.

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

// jsonStep is a step of a submission being checked: its task's handler
// (nil for a wait) and its node.
type jsonStep struct {
	label string
	h     *handler
	node  *stepNode
	// typ is a signal wait's payload type, fixed by the first step that
	// takes it (nil until then: a wait nothing takes is unchecked).
	typ reflect.Type
	// from is a sleep's predecessor, whose result it passes on.
	from *jsonStep
}

// resultType is the Go type of what step p passes on (nil: a signal wait
// whose type no step fixed yet).
func (p *jsonStep) resultType() reflect.Type {
	switch {
	case p.h != nil:
		return resultTypeOf(p.h)
	case p.from != nil:
		return p.from.resultType()
	}
	return p.typ
}

// takes has step p pass on want: a signal wait whose type is not fixed yet
// (or the one a sleep passes on) takes it as its payload's type, by which
// the API reads a signal's JSON.
func (p *jsonStep) takes(want reflect.Type) reflect.Type {
	switch {
	case p.from != nil:
		return p.from.takes(want)
	case p.h == nil && p.typ == nil && p.node.wait == record.KindSignal:
		p.typ = want
		p.node.gotype = typeName(want)
	}
	return p.resultType()
}

// what names step p's kind for a message: its task, or the wait it is.
func (p *jsonStep) what() string {
	switch {
	case p.h != nil:
		return p.h.name
	case p.node.wait == record.KindTimer:
		return "a sleep"
	}
	return "a wait for signal " + p.node.signal
}

// workflowNodes checks every step of s, in order, and returns their nodes:
// the graph as package workflows checks it, and each step's task, args and
// types here.
func (in *inspector) workflowNodes(s admin.WorkflowSubmission) ([]*stepNode, error) {
	specs := make([]workflows.StepSpec, len(s.Steps))
	for i, st := range s.Steps {
		specs[i] = workflows.StepSpec{Label: st.ID, After: st.After}
	}
	done := make([]*jsonStep, len(s.Steps))
	nodes := make([]*stepNode, len(s.Steps))
	err := workflows.CheckGraph(specs, func(i int, after []int) error {
		preds := make([]*jsonStep, len(after))
		for j, k := range after {
			preds[j] = done[k]
		}
		step, err := in.checkStep(fmt.Sprintf("steps[%d]", i), s.Steps[i], preds)
		done[i] = step
		if step != nil {
			nodes[i] = step.node
		}
		return err
	})
	var ge *workflows.GraphError
	if errors.As(err, &ge) {
		return nil, admin.Invalid(ge.Field, "%s", ge.Msg)
	}
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

// checkStep checks one step — its task, its args or its predecessors'
// results, its task's options — and builds its node.
func (in *inspector) checkStep(at string, st admin.WorkflowStepSubmission, preds []*jsonStep) (*jsonStep, error) {
	if st.Signal != "" || st.Sleep != "" {
		return waitStep(at, st, preds)
	}
	if st.Timeout != "" {
		return nil, admin.Invalid(at+".timeout", "step %q: a timeout is a signal wait's: give signal too", st.ID)
	}
	h := in.reg.handlers[st.Name]
	if h == nil {
		return nil, admin.OnField(at+".name", fmt.Errorf("%w: step %q: no task named %q (registered: %s)", ErrUnknownTask, st.ID, st.Name, strings.Join(in.reg.Tasks(), ", ")))
	}
	first := len(preds) == 0
	if !first && st.Args != nil {
		return nil, admin.Invalid(at+".args", "step %q has args and after: a step takes args (a first step) or the results of the steps it comes after, not both", st.ID)
	}
	if err := stepTypes(at, st, h, preds); err != nil {
		return nil, err
	}
	n, err := h.stepJSON(in.c, st.Args, first)
	switch {
	case errors.Is(err, ErrBadArgs):
		return nil, admin.Invalid(at+".args", "step %q: %s", st.ID, admin.Message(err))
	case err != nil:
		return nil, admin.Invalid(at, "step %q: %s", st.ID, admin.Message(err))
	case n.argErr != nil:
		return nil, admin.Invalid(at+".args", "step %q: encode args: %v", st.ID, n.argErr)
	}
	if err := checkPayload("args of step ", st.ID, len(n.args), in.c.maxPayload); err != nil {
		return nil, admin.OnField(at+".args", err)
	}
	if err := stepOptions(at, st, n, in.c); err != nil {
		return nil, err
	}
	n.label = st.ID
	for _, p := range preds {
		n.after = append(n.after, p.node)
	}
	return &jsonStep{label: st.ID, h: h, node: n}, nil
}

// waitStep checks a wait of a submission (a signal wait, or a sleep) and
// builds its node: a step without a task, args or job.
func waitStep(at string, st admin.WorkflowStepSubmission, preds []*jsonStep) (*jsonStep, error) {
	switch {
	case st.Name != "":
		return nil, admin.Invalid(at+".name", "step %q is a wait: it runs no task (leave name out)", st.ID)
	case st.Args != nil:
		return nil, admin.Invalid(at+".args", "step %q is a wait: it takes no args", st.ID)
	case st.Signal != "" && st.Sleep != "":
		return nil, admin.Invalid(at+".sleep", "step %q: a step waits for a signal or sleeps, not both", st.ID)
	}
	n := &stepNode{label: st.ID}
	for _, p := range preds {
		n.after = append(n.after, p.node)
	}
	step := &jsonStep{label: st.ID, node: n}
	if st.Sleep != "" {
		d, err := time.ParseDuration(st.Sleep)
		if err != nil || d < 0 {
			return nil, admin.Invalid(at+".sleep", "step %q: sleep %q: want a Go duration of 0 or more (\"90s\", \"2h\")", st.ID, st.Sleep)
		}
		if len(preds) != 1 {
			return nil, admin.Invalid(at+".after", "step %q sleeps after one step, and passes its result on: after names %d", st.ID, len(preds))
		}
		n.wait, n.dur = record.KindTimer, d
		step.from = preds[0]
		return step, nil
	}
	if err := redisstore.CheckSignalName(st.Signal); err != nil {
		return nil, admin.Invalid(at+".signal", "step %q: %v", st.ID, err)
	}
	var timeout time.Duration
	if st.Timeout != "" {
		d, err := time.ParseDuration(st.Timeout)
		if err != nil || d < 0 {
			return nil, admin.Invalid(at+".timeout", "step %q: timeout %q: want a Go duration of 0 or more (\"48h\"; 0 waits for ever)", st.ID, st.Timeout)
		}
		timeout = d
	}
	n.wait, n.dur, n.signal = record.KindSignal, timeout, st.Signal
	return step, nil
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
func stepTypes(at string, st admin.WorkflowStepSubmission, h *handler, preds []*jsonStep) error {
	want := h.argsType
	switch {
	case len(preds) == 0:
		return nil
	case len(preds) == 1:
		p := preds[0]
		if got := p.takes(want); got != nil && got != want {
			return admin.Invalid(at+".after", "step %q (%s) takes %s, but step %q (%s), which it comes after, returns %s",
				st.ID, st.Name, want, p.label, p.what(), got)
		}
		return nil
	case want.Kind() != reflect.Slice:
		return admin.Invalid(at+".after", "step %q (%s) comes after %d steps and runs with the list of their results, but it takes %s, not a list",
			st.ID, st.Name, len(preds), want)
	}
	for _, p := range preds {
		if got := p.takes(want.Elem()); got != nil && got != want.Elem() {
			return admin.Invalid(at+".after", "step %q (%s) takes %s, a list of %s, but step %q (%s), which it comes after, returns %s",
				st.ID, st.Name, want, want.Elem(), p.label, p.what(), got)
		}
	}
	return nil
}
