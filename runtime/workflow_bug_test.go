package runtime_test

import (
	"context"
	"slices"
	"testing"

	"github.com/bananas-go/bananas/runtime"
)

// A workflow may end in a Gather (its result is the gathered results). With
// every step's task bound to a client (With) and no default client, the
// gather, which has no task to bind, must submit and await on its steps'
// client: Step.Enqueue finds its client only on the final step's own task,
// so this workflow cannot be enqueued at all ("workflow has no client ...
// use the final step's task's With(client)"), and with a default client set
// it would go to that client instead of the steps'.
func TestWorkflow_EndingInAGatherEnqueuesOnItsStepsClient(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, wfDouble, func(_ context.Context, x int) (int, error) { return 2 * x, nil })
		startWorker(t, w)
		final := runtime.Gather(wfDouble.With(c).Step(1), wfDouble.With(c).Step(2))
		id, err := final.Enqueue(ctx)
		if err != nil {
			t.Fatalf("Enqueue of a workflow ending in a Gather of steps bound to a client: %v", err)
		}
		got, err := final.Await(ctx, id)
		if err != nil || !slices.Equal(got, []int{2, 4}) {
			t.Fatalf("Await = %v, %v; want [2 4]", got, err)
		}
	})
}
