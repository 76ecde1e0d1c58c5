package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// Random lives of jobs over a few unique keys — enqueue, start, complete,
// fail into a retry, die, die by a lost lease, cancel waiting or running,
// delete, replay, expire before the start (by the sweep, or set aside by a
// fetch) — never leave a key held until ended by no live job, nor
// two live jobs under one key: after every step, each key is held exactly
// when one job of it waits or runs, and by that job.
func TestUnique_RandomLivesKeepOneLiveHolderPerKey(t *testing.T) {
	eachServer(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		seed := time.Now().UnixNano()
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		t.Logf("seed %d", seed)
		keys := []string{"k0", "k1", "k2"}
		now := time.Now()
		keyOf := map[string]string{} // job id -> its unique key
		var ids []string             // every job written
		var running []*queue.Dispatch
		var trail []string
		pick := func(n int) int { return rng.IntN(n) }
		for step := range 300 {
			now = now.Add(time.Millisecond)
			var did string
			switch op := pick(11); {
			case op <= 2: // enqueue
				j := uniqueJob(t, keys[pick(len(keys))], queue.UntilEnded)
				j.MaxRetries = 1
				if pick(3) == 0 {
					j.ExpireAt = now.Add(time.Duration(1+pick(20)) * time.Millisecond)
				}
				if h := enqueueUnique(t, q, j, now); h == "" {
					keyOf[j.ID] = j.UniqueKey
					ids = append(ids, j.ID)
				}
				did = "enqueue " + j.UniqueKey
			case op == 3: // start
				ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, now.Add(10*time.Second), now)
				if err != nil {
					t.Fatal(err)
				}
				running = append(running, ds...)
				did = fmt.Sprintf("start (%d)", len(ds))
			case op <= 6 && len(running) > 0: // complete, fail, die
				i := pick(len(running))
				d := running[i]
				running = slices.Delete(running, i, i+1)
				switch op {
				case 4:
					if _, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); err != nil {
						t.Fatal(err)
					}
					did = "complete " + d.ID
				default:
					f := queue.Failure{Message: "boom", RetryAt: now, Final: op == 6, Record: []byte("rec"), TTL: time.Minute}
					if _, err := q.Jobs.Fail(ctx, d, f, now); err != nil {
						t.Fatal(err)
					}
					did = fmt.Sprintf("fail (final %v) %s", op == 6, d.ID)
				}
			case op == 7 && len(ids) > 0: // cancel or delete, waiting or running
				id := ids[pick(len(ids))]
				if i := slices.IndexFunc(running, func(d *queue.Dispatch) bool { return d.ID == id }); i >= 0 && pick(2) == 0 {
					if _, err := q.Jobs.FinishCanceled(ctx, running[i], []byte("canceled"), time.Minute); err != nil {
						t.Fatal(err)
					}
					running = slices.Delete(running, i, i+1)
					did = "finish canceled " + id
				} else if pick(2) == 0 {
					_, err := q.Jobs.Cancel(ctx, id, []byte("canceled"), time.Minute)
					if err != nil && !errors.Is(err, queue.ErrWrongState) && !errors.Is(err, queue.ErrNotFound) {
						t.Fatal(err)
					}
					did = "cancel " + id
				} else {
					err := q.Jobs.Delete(ctx, id)
					if err != nil && !errors.Is(err, queue.ErrWrongState) && !errors.Is(err, queue.ErrNotFound) {
						t.Fatal(err)
					}
					did = "delete " + id
				}
			case op == 8 && len(ids) > 0: // replay
				id := ids[pick(len(ids))]
				err := q.Ops.Replay(ctx, id)
				if err != nil && !errors.Is(err, queue.ErrKeyHeld) && !errors.Is(err, queue.ErrNotFound) {
					t.Fatal(err)
				}
				did = fmt.Sprintf("replay %s: %v", id, err)
			case op == 9: // every lease is lost
				now = now.Add(20 * time.Second)
				if _, err := q.Jobs.Reap(ctx, "r", now, verdict(now)); err != nil {
					t.Fatal(err)
				}
				running = nil
				did = "reap"
			case op == 10: // the expiry sweep
				got, err := q.Jobs.ExpireDue(ctx, "r", now)
				if err != nil {
					t.Fatal(err)
				}
				did = fmt.Sprintf("expire (%d)", len(got))
			default:
				continue
			}
			if _, err := q.Jobs.Promote(ctx, "r", now); err != nil {
				t.Fatal(err)
			}
			trail = append(trail, did)
			if why := keysHeldByTheirLiveJob(t, q, keys, ids, keyOf); why != "" {
				t.Fatalf("after step %d (%s): %s\nsteps: %v", step, did, why, trail)
			}
		}
	})
}

// keysHeldByTheirLiveJob says how the keys break the rule of
// TestUnique_RandomLivesKeepOneLiveHolderPerKey, or "".
func keysHeldByTheirLiveJob(t *testing.T, q *queue.Queue, keys, ids []string, keyOf map[string]string) string {
	ctx := context.Background()
	k := q.Keys("r")
	live := map[string][]string{}
	for _, id := range ids {
		c := q.Client()
		leased := c.HExists(ctx, k.Leases(), id).Val()
		_, errS := c.ZScore(ctx, k.Scheduled(), id).Result()
		_, errL := c.LPos(ctx, k.List(queue.Normal), id, redis.LPosArgs{}).Result()
		if leased || errS == nil || errL == nil {
			live[keyOf[id]] = append(live[keyOf[id]], id)
		}
	}
	for _, key := range keys {
		h := holderOf(t, q, key)
		switch l := live[key]; {
		case len(l) > 1:
			return fmt.Sprintf("key %s has %d live jobs %v (held by %q)", key, len(l), l, h)
		case len(l) == 1 && h != l[0]:
			return fmt.Sprintf("key %s is held by %q while its live job is %s", key, h, l[0])
		case len(l) == 0 && h != "":
			return fmt.Sprintf("key %s is held by %s, which is not live", key, h)
		}
	}
	return ""
}

// eachServer is eachBackend and a three-master Redis Cluster.
func eachServer(t *testing.T, f func(t *testing.T, q *queue.Queue)) {
	t.Helper()
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		q, err := queue.New(redistest.SharedCluster(t).Client(t), redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		f(t, q)
	})
	eachBackend(t, f)
}
