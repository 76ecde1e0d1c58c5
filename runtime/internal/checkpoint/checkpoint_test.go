package checkpoint_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/checkpoint"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Only the run that holds the job's lease writes; a write run twice stores
// the same; a read finds the value; a delete removes it.
func TestStore_OnlyTheRunHoldingTheLeaseWrites(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		q, err := queue.New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		st := checkpoint.New(q)
		k := q.Keys("r")
		if err := rdb.HSet(ctx, k.Leases(), "job1", "tok-new").Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := st.Write(ctx, "r", "job1", "tok-old", []byte("old"), time.Hour); ok || err != nil {
			t.Fatalf("a run that lost its lease: stored %v, %v; want nothing stored", ok, err)
		}
		if _, found, err := st.Read(ctx, "r", "job1"); found || err != nil {
			t.Fatalf("read after a refused write: found %v, %v", found, err)
		}
		h := redistest.HookSecondRun(t, rdb, q.Namespace())
		h.During(func() {
			if ok, err := st.Write(ctx, "r", "job1", "tok-new", []byte("v1"), time.Hour); !ok || err != nil {
				t.Fatalf("the lease holder's write: %v, %v", ok, err)
			}
		})
		b, found, err := st.Read(ctx, "r", "job1")
		if !found || err != nil || string(b) != "v1" {
			t.Fatalf("Read = %q, %v, %v; want v1", b, found, err)
		}
		if ttl := rdb.PTTL(ctx, k.Checkpoint("job1")).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("ttl %s; want the hour given", ttl)
		}
		if ok, _ := st.Write(ctx, "r", "job1", "tok-old", []byte("late"), time.Hour); ok {
			t.Fatal("a late write of an old run was stored")
		}
		if b, _, _ := st.Read(ctx, "r", "job1"); string(b) != "v1" {
			t.Fatalf("after a late write of an old run: %q; want v1 kept", b)
		}
		if err := st.Delete(ctx, "r", "job1"); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := st.Read(ctx, "r", "job1"); found {
			t.Fatal("found after Delete")
		}
		if err := rdb.HSet(ctx, k.Checkpoint("job2"), "x", "y").Err(); err != nil {
			t.Fatal(err)
		}
		if _, found, err := st.Read(ctx, "r", "job2"); found || err != nil {
			t.Fatalf("garbage of another type reads as %v, %v; want none", found, err)
		}
	})
}
