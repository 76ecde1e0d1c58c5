package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// RunNow moves a scheduled job to its ready list at once, keeps the jobs
// that are not yet due where they are, answers a second call (its answer
// lost) as done, and refuses a job in another state naming it.
func TestRunNow_AScheduledJobIsPendingAtOnceAndTwiceIsHarmless(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		a, b := job(t, "r"), job(t, "r")
		a.RunAt, b.RunAt = now.Add(time.Hour), now.Add(time.Hour)
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{a, b}, now); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if err := q.Jobs.RunNow(ctx, a.ID); err != nil {
				t.Fatalf("run now, call %d: %v", i+1, err)
			}
			wantPlace(t, q, "r", a.ID, queue.Normal)
			wantPlace(t, q, "r", b.ID, "scheduled")
		}
		if s, err := q.Jobs.Lookup(ctx, a.ID); err != nil || s.Status != queue.StatusPending {
			t.Fatalf("the job run now looks up as %+v, %v; want pending", s, err)
		}
		dead := deadJob(t, q, now)
		if err := q.Jobs.RunNow(ctx, dead); !errors.Is(err, queue.ErrWrongState) || !strings.Contains(err.Error(), "failed") {
			t.Fatalf("run now of a dead job: %v; want ErrWrongState naming failed", err)
		}
		wantPlace(t, q, "r", dead, "dead")
		if err := q.Jobs.RunNow(ctx, job(t, "r").ID); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("run now of an unknown job: %v; want ErrNotFound", err)
		}
	})
}
