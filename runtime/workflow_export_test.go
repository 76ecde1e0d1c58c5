package runtime

import (
	"context"
	"encoding/json"

	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// StepTemplate is the template a submission stores for a step of task name
// on route: what its job is made of.
func StepTemplate(name, route string) []byte {
	b, err := json.Marshal(workflows.Template{Name: name, Route: route, Priority: PriorityNormal})
	if err != nil {
		panic(err)
	}
	return b
}

// MakeSteps makes the jobs of steps of workflow wf as c's runner does
// (own: the caller's own script call marked them creating).
func MakeSteps(ctx context.Context, c *Client, wf string, steps []record.ReadyStep, own bool) []error {
	return c.makeSteps(ctx, wf, steps, own)
}

// CheckWorkflow looks at workflow id as its keeper does.
func CheckWorkflow(ctx context.Context, c *Client, id string) error {
	return c.workflowRunner().Check(ctx, id)
}

// SetCheckpointWriteHook has f told of each checkpoint write this process
// makes, by job id; nil stops it.
func SetCheckpointWriteHook(f func(job string)) { checkpointWriteHook.Store(&f) }
