package workflows

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The keeper drops from the list of workflows the entries whose records
// expired, and keeps those of workflows that live on, however old.
func TestKeeper_PrunesTheListOfWorkflowsOfExpiredRecords(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		q, err := queue.New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		long := time.Now().Add(-48 * time.Hour)
		steps := []queue.WorkflowStep{{Label: "a", JobID: "job-a", Template: []byte("t"), Args: []byte{0xc0}}}
		for _, id := range []string{"expired-1", "live", "expired-2", "new"} {
			at := long
			if id == "new" {
				at = time.Now()
			}
			if _, _, err := q.SubmitWorkflow(ctx, id, steps, 0, time.Minute, at); err != nil {
				t.Fatal(err)
			}
		}
		rdb.Del(ctx, queue.WorkflowKey(q.Namespace(), "expired-1"), queue.WorkflowKey(q.Namespace(), "expired-2"))
		k := &Keeper{R: &Runner{Q: q, TTLs: queue.WorkflowTTLs{Completed: 24 * time.Hour, Failed: 7 * 24 * time.Hour}},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		k.prune(ctx)
		ids, err := rdb.ZRange(ctx, queue.WorkflowList(q.Namespace()), 0, -1).Result()
		if err != nil || len(ids) != 2 || ids[0] != "live" || ids[1] != "new" {
			t.Fatalf("the list after the prune: %v, %v; want live and new", ids, err)
		}
		if k.pruneFrom != 0 {
			t.Fatalf("the prune goes on from %d; want 0 after reaching the end", k.pruneFrom)
		}
	})
}
