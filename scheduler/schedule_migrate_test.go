package scheduler_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// writeLegacy writes schedule id as schedules were recorded before their
// buckets: its record at ns:schedule:{<id>}, indexed in ns:schedules.
func writeLegacy(t *testing.T, q *queue.Queue, id, route, spec string, next time.Time) {
	t.Helper()
	ctx := context.Background()
	env, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
	if err != nil {
		t.Fatal(err)
	}
	now := strconv.FormatInt(q.Now().UnixMilli(), 10)
	key := q.Namespace() + ":schedule:{" + id + "}"
	if err := q.Client().HSet(ctx, key, "name", "t", "route", route, "prio", "normal", "env", env, "retries", "3",
		"args", "", "spec", spec, "tz", "", "jitter", "0", "overlap", "allow", "catchup", "0", "start", "0", "end", "0",
		"plan", spec+"||0|0", "paused", "0", "next", strconv.FormatInt(next.UnixMilli(), 10),
		"created", now, "updated", now, "fired", "0", "skipped", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.AddRoute(ctx, route); err != nil {
		t.Fatal(err)
	}
	if err := q.Client().ZAdd(ctx, q.Namespace()+":schedules", redisZ(next, id)).Err(); err != nil {
		t.Fatal(err)
	}
}

// A schedule recorded under the single index that schedules had before
// their buckets is moved into its bucket when a scheduler starts, and
// fires; moving it again (another scheduler, a resend) changes nothing, and
// an old record of a schedule its bucket holds already leaves the bucket's.
func TestSchedules_ARecordOfTheSingleIndexIsMovedIntoItsBucketAndFires(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		s := &scheduler.Schedules{Queue: q}
		writeLegacy(t, q, "old1", "rm", "@every 1s", q.Now().Truncate(time.Second).Add(time.Second))
		stop := runRunner(t, &scheduler.ScheduleRunner{Schedules: s, Safety: 50 * time.Millisecond,
			OnError: func(id string, err error) { t.Errorf("schedule %q: %v", id, err) }})
		waitUntil(t, ctx, "the old schedule fired", func() bool {
			sc, err := s.Get(ctx, "old1")
			return err == nil && sc.Fired >= 1
		})
		stop()
		if n, _ := q.Client().Exists(ctx, q.Namespace()+":schedule:{old1}", q.Namespace()+":schedules").Result(); n != 0 {
			t.Fatalf("%d old keys left after the move", n)
		}
		sc := get(t, s, "old1")
		if sc.Spec != "@every 1s" || sc.Route != "rm" {
			t.Fatalf("moved schedule: spec %q, route %q, fired %d", sc.Spec, sc.Route, sc.Fired)
		}
		checkOnePerTick(t, q, s, "old1", "rm")
		if n, err := s.Migrate(ctx); err != nil || n != 0 {
			t.Fatalf("a second move moved %d, %v; want nothing", n, err)
		}

		// The bucket holds old2 already (put since): its old record goes,
		// the bucket's stays as it is, twice over.
		if _, err := s.Put(ctx, scheduler.ScheduleDef{ID: "old2", Name: "t", Route: "rm2", Envelope: []byte{0x80},
			Spec: "@every 1h", Paused: true}, q.Now()); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			writeLegacy(t, q, "old2", "rm2", "@every 1s", q.Now())
			if n, err := s.Migrate(ctx); err != nil || n != 0 {
				t.Fatalf("move of a schedule its bucket holds: moved %d, %v", n, err)
			}
			if got := get(t, s, "old2"); got.Spec != "@every 1h" || !got.Paused {
				t.Fatalf("the bucket's record changed by an old one: spec %q, paused %v", got.Spec, got.Paused)
			}
			if n, _ := q.Client().Exists(ctx, q.Namespace()+":schedule:{old2}").Result(); n != 0 {
				t.Fatal("the old record is left")
			}
		}
	})
}

func redisZ(at time.Time, id string) redis.Z {
	return redis.Z{Score: float64(at.UnixMilli()), Member: id}
}

// On a cluster, where the old index and each old record sit in different
// slots, the move works all the same: each schedule lands in its bucket.
func TestSchedules_OldRecordsAreMovedIntoTheirBucketsOnACluster(t *testing.T) {
	cl := redistest.SharedCluster(t)
	q, err := queue.New(cl.Client(t), redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := &scheduler.Schedules{Queue: q}
	ids := []string{"acme", "globex", "initech", "umbrella"}
	for _, id := range ids {
		writeLegacy(t, q, id, "r"+id, "0 0 1 1 *", q.Now().Add(time.Hour))
	}
	for want := len(ids); ; want = 0 { // the second run moves nothing
		n, err := s.Migrate(ctx)
		if err != nil || n != want {
			t.Fatalf("moved %d, %v; want %d", n, err, want)
		}
		if want == 0 {
			break
		}
	}
	for _, id := range ids {
		if sc := get(t, s, id); sc.Route != "r"+id || sc.Spec != "0 0 1 1 *" {
			t.Fatalf("%s moved as route %q spec %q", id, sc.Route, sc.Spec)
		}
	}
	if n, _ := q.Client().Exists(ctx, q.Namespace()+":schedules").Result(); n != 0 {
		t.Fatal("the old index is left")
	}
}
