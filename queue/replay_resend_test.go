package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// A replay whose reply is lost and which the client resends answers
// replayed, as its first run did, and writes nothing more; another replay
// call after it answers that the job is not in the dead-letter set.
func TestReplay_AResentCallAnswersReplayedAndWritesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		id := deadJob(t, q, time.Now())
		twice := &redistest.Twice{Only: func(name string) bool { return name == "evalsha" || name == "eval" }}
		q.Client().(*redis.Client).AddHook(twice)
		if err := q.Ops.Replay(ctx, id); err != nil {
			t.Fatalf("the resent replay = %v; want replayed", err)
		}
		if twice.Runs() == 0 {
			t.Fatal("the replay was not sent twice")
		}
		s, err := q.Jobs.Lookup(ctx, id)
		if err != nil || s.Status != queue.StatusPending || len(s.Earlier) != 1 {
			t.Fatalf("after the resent replay: %+v, %v; want pending with one earlier life", s, err)
		}
		if err := q.Ops.Replay(ctx, id); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("another replay = %v; want not in the dead-letter queue", err)
		}
		if n, _ := q.Client().LLen(ctx, q.Keys("r").List(queue.Normal)).Result(); n != 1 {
			t.Fatalf("the ready list holds %d; want the job once", n)
		}
	})
}
