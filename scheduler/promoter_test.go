package scheduler_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv("BANANAS_TEST_SCHEDULER_ADDR"); addr != "" {
		runSchedulerProcess(addr, os.Getenv("BANANAS_TEST_SCHEDULER_NS"))
		return
	}
	redistest.Main(m)
}

func eachBackend(t *testing.T, f func(t *testing.T, q *queue.Queue)) {
	t.Helper()
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		q, err := queue.New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		f(t, q)
	})
}

// The promoter sleeps until the earliest due job (here far below its safety
// period of an hour), and a Wake for an earlier job cuts a longer sleep short.
func TestPromoter_SleepsUntilDueAndWakesForEarlierJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		env, _ := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
		enqueueAt := func(route string, at time.Time) string {
			id := queue.NewID(route, time.Now())
			if _, err := q.Jobs.Enqueue(ctx, route, queue.Normal, []queue.NewJob{{ID: id, Name: "t", Envelope: env, RunAt: at}}, time.Now()); err != nil {
				t.Fatal(err)
			}
			return id
		}
		far := enqueueAt("a", time.Now().Add(time.Hour))
		enqueueAt("b", time.Now().Add(150*time.Millisecond))
		wake := make(chan time.Time, 1)
		p := &scheduler.Promoter{
			Queue:  q,
			Routes: func(context.Context) ([]string, error) { return []string{"a", "b"}, nil },
			Wake:   wake,
			Safety: time.Hour,
		}
		go p.Run(ctx)
		ready := func(route string) int64 {
			d, err := q.Ops.Depths(ctx, []string{route})
			if err != nil {
				t.Fatal(err)
			}
			return d[0].Normal
		}
		waitUntil(t, ctx, "the soon job promoted", func() bool { return ready("b") == 1 })
		// Now the promoter sleeps until the far job, an hour away; a job due
		// sooner only runs in time because Wake tells the promoter about it.
		at := time.Now().Add(100 * time.Millisecond)
		enqueueAt("a", at)
		wake <- at
		waitUntil(t, ctx, "the woken-for job promoted", func() bool { return ready("a") == 1 })
		if s, _ := q.Jobs.Lookup(ctx, far); s.Status != queue.StatusScheduled {
			t.Fatalf("the job due in an hour is %s, want still scheduled", s.Status)
		}
	})
}

func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// A run-at offered while another waits in the Wake buffer must not be lost
// when it is the earlier one: the job it announces is due first.
func TestOfferWake_KeepsTheEarlierRunAt(t *testing.T) {
	ch := make(chan time.Time, 1)
	now := time.Now()
	later, sooner := now.Add(time.Minute), now.Add(time.Second)

	scheduler.OfferWake(ch, later)
	scheduler.OfferWake(ch, sooner)
	if got := <-ch; !got.Equal(sooner) {
		t.Fatalf("wake holds %v, want the sooner run-at %v", got.Sub(now), sooner.Sub(now))
	}

	scheduler.OfferWake(ch, sooner)
	scheduler.OfferWake(ch, later)
	if got := <-ch; !got.Equal(sooner) {
		t.Fatalf("a later run-at replaced the waiting sooner one: wake holds %v", got.Sub(now))
	}
	select {
	case got := <-ch:
		t.Fatalf("one wake expected, a second one waits: %v", got.Sub(now))
	default:
	}
}
