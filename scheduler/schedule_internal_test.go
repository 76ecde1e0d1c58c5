package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// A runner whose read of a schedule went stale before its claim — another
// runner fired the tick meanwhile, or the schedule was paused — claims
// nothing: the claim's compare-and-set is on the record as it is now.
func TestClaim_AStaleReadClaimsNothing(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		q, err := queue.New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		s := &Schedules{Queue: q}
		env, _ := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
		r := &ScheduleRunner{Schedules: s}
		for _, id := range []string{"fired", "paused"} {
			sc, err := s.Put(ctx, ScheduleDef{ID: id, Name: "t", Route: "r", Envelope: env, Spec: "@every 1s", Overlap: bananastype.OverlapAllow}, q.Now())
			if err != nil {
				t.Fatal(err)
			}
			for !q.Now().After(sc.Next) {
				select {
				case <-ctx.Done():
					t.Fatal("the tick never came")
				case <-time.After(10 * time.Millisecond):
				}
			}
			stale, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			want := "stale"
			if id == "fired" {
				err = r.Step(ctx, id)
			} else {
				want, err = "paused", s.Pause(ctx, id, true, q.Now())
			}
			if err != nil {
				t.Fatal(err)
			}
			before, _ := rdb.HGetAll(ctx, s.Key(id)).Result()
			c, err := r.plan(ctx, stale, q.Now())
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.claim(ctx, stale, c, q.Now())
			if err != nil || got != want {
				t.Fatalf("%s: claim on a stale read = %q, %v; want %q", id, got, err, want)
			}
			after, _ := rdb.HGetAll(ctx, s.Key(id)).Result()
			if redistest.Diff(before, after) != "" {
				t.Fatalf("%s: a refused claim wrote:\n%s", id, redistest.Diff(before, after))
			}
		}
	})
}
