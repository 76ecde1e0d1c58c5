package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The same scripts run on a real three-master Redis Cluster: every key a
// script touches shares its route's hash tag, and routes spread over the nodes.
func TestCluster_EveryTransitionAcrossSlots(t *testing.T) {
	t.Parallel()
	cl := redistest.SharedCluster(t)
	c := connect(t, cl.URL())
	task := testtasks.Echo.With(c)
	failing := testtasks.Note.With(c)
	routes := []string{"r1", "r2", "r3", "r4", "r5", "r6"}
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: routes, Concurrency: 4}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
	runtime.Handle(w, failing, func(ctx context.Context, m Msg) (runtime.None, error) {
		return runtime.None{}, errors.New("always")
	})
	startWorker(t, w)
	ctx := ctxT(t)

	slots := map[int64]bool{}
	for _, r := range routes {
		slot, err := c.Redis().ClusterKeySlot(ctx, runtime.QueueOf(c).Keys(r).Active()).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[slot/5461] = true
		ids, err := task.EnqueueMany(ctx, []Msg{{Text: r + "-1"}, {Text: r + "-2"}}, runtime.Route(r))
		if err != nil {
			t.Fatalf("EnqueueMany on %s: %v", r, err)
		}
		for i, id := range ids {
			if got, err := task.Await(ctx, id); err != nil || got.Text != r+"-"+string(rune('1'+i)) {
				t.Fatalf("Await %s = %+v, %v", id, got, err)
			}
		}
	}
	if len(slots) < 2 {
		t.Fatalf("routes %v all hash to one node; the test would not cross slots", routes)
	}
	if got, err := task.Call(ctx, Msg{Text: "delayed"}, runtime.Route("r3"), runtime.Delay(100*time.Millisecond)); err != nil || got.Text != "delayed" {
		t.Fatalf("delayed Call = %+v, %v", got, err)
	}
	if _, err := task.Enqueue(ctx, Msg{}, runtime.Route("r2"), runtime.WithID("chosen")); err != nil {
		t.Fatal(err)
	}
	if _, err := task.Await(ctx, "chosen"); err != nil {
		t.Fatalf("Await(chosen id) on a cluster: %v", err)
	}
	id, _ := failing.Enqueue(ctx, Msg{}, runtime.Route("r5"), runtime.MaxRetries(1))
	var je *runtime.JobError
	if _, err := failing.Await(ctx, id); !errors.As(err, &je) || je.Attempts != 2 {
		t.Fatalf("failing Await = %v; want a JobError after 2 attempts", err)
	}
	if err := runtime.QueueOf(c).Ops.Replay(ctx, id); err != nil {
		t.Fatalf("Replay on a cluster: %v", err)
	}
	if info, err := c.Job(ctx, id); err != nil || info.Route != "r5" {
		t.Fatalf("Job = %+v, %v", info, err)
	}
	if _, err := runtime.QueueOf(c).Ops.Depths(ctx, routes); err != nil {
		t.Fatalf("Depths on a cluster: %v", err)
	}
}
