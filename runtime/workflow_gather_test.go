package runtime_test

import (
	"context"
	"slices"
	"testing"

	"github.com/bananas-go/bananas/runtime"
)

// A workflow may end in a Gather, whose result is the gathered results: with
// every step's task bound to a client (With) and no default client, it is
// submitted and awaited on its steps' client.
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
