package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
)

// Route pruning keeps the routes a worker fetches from, its own included
// before its first heartbeat, and those cron entries fire to; a worker that
// runs no jobs (a scheduler) does not keep the routes in its options, as it
// does not count as their taker either.
func TestServedRoutes_AreTheRoutesAWorkerFetchesFromOrFiresCronTo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, redistest.Shared(t).URL(), WithNamespace(redistest.Namespace(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fetcher := NewWorker(c, WorkerOptions{Routes: []string{"images"}, Concurrency: 2})
	scheduler := NewWorker(c, WorkerOptions{Routes: []string{"idle"}, Concurrency: 2, SchedulerOnly: true})
	scheduler.cron = []CronEntry{{Name: "nightly", Route: "reports", Spec: "@daily"}}
	for w, want := range map[*Worker]map[string]bool{
		fetcher:   {"images": true},
		scheduler: {"reports": true},
	} {
		got, err := w.servedRoutes(ctx)
		if err != nil || len(got) != len(want) {
			t.Fatalf("served routes = %v, %v; want %v", got, err, want)
		}
		for r := range want {
			if !got[r] {
				t.Fatalf("served routes = %v; want %v", got, want)
			}
		}
	}
}
