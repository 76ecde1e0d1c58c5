package queue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Random enqueues, fetches, acks, failures with their retries, hand-backs
// and deletes over 3 keys of each of two tasks (capped at 2 and at 1), at 3
// priorities: at every step no key runs more jobs than its cap, and in the
// end every job has ended (completed, dead or deleted) and no flow is left
// behind — no key stuck, none lost.
func TestFlow_RandomStepsNeverOverrunACapNorStickAKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		seed := uint64(time.Now().UnixNano())
		rng := rand.New(rand.NewPCG(seed, seed))
		t.Logf("seed %d", seed)
		caps := map[string]int{"t": 2, "u": 1}
		for task, n := range caps {
			if err := q.Flows.SetTaskLimits(ctx, "rnd", task, queue.Limits{MaxRunning: n}); err != nil {
				t.Fatal(err)
			}
		}
		keyOf := map[string]string{}
		running := map[string]*queue.Dispatch{}
		gone := map[string]bool{} // completed, dead or deleted
		perKey := func() map[string]int {
			n := map[string]int{}
			for id := range running {
				n[keyOf[id]]++
			}
			return n
		}
		step := func() {
			now := q.Now()
			switch op := rng.IntN(10); {
			case op < 3:
				task := []string{"t", "u"}[rng.IntN(2)]
				key := task + fmt.Sprint("|k", rng.IntN(3))
				j := keyedJob(t, "rnd", task, key[2:])
				if _, err := q.Jobs.Enqueue(ctx, "rnd", queue.Priorities[rng.IntN(3)], []queue.NewJob{j}, now); err != nil {
					t.Fatal(err)
				}
				keyOf[j.ID] = key
			case op < 5:
				ds, err := q.Jobs.Fetch(ctx, "rnd", queue.Priorities, 1+rng.IntN(4), now.Add(time.Hour), now)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range ds {
					running[d.ID] = d
				}
			case op < 9:
				for id, d := range running {
					delete(running, id)
					switch rng.IntN(4) {
					case 0:
						out, err := q.Jobs.Fail(ctx, d, queue.Failure{Message: "x", RetryAt: now, Record: []byte("f"), TTL: time.Minute}, now)
						if err != nil {
							t.Fatal(err)
						}
						if out == queue.EndDead { // out of retries: ended too
							gone[id] = true
						}
					case 1:
						if _, err := q.Jobs.Requeue(ctx, d, []byte("c"), time.Minute, now); err != nil {
							t.Fatal(err)
						}
					default:
						if _, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); err != nil {
							t.Fatal(err)
						}
						gone[id] = true
					}
					break
				}
			default:
				if _, err := q.Jobs.Promote(ctx, "rnd", now.Add(time.Millisecond)); err != nil {
					t.Fatal(err)
				}
				for id := range keyOf {
					if !gone[id] && running[id] == nil && rng.IntN(20) == 0 && q.Jobs.Delete(ctx, id) == nil {
						gone[id] = true
					}
				}
			}
			for key, n := range perKey() {
				if limit := caps[key[:1]]; n > limit {
					t.Fatalf("key %s runs %d jobs, over its cap of %d (seed %d)", key, n, limit, seed)
				}
			}
		}
		for range 600 {
			step()
		}
		// Drain: ack whatever runs, promote the retries, fetch again.
		for round := 0; round < 400 && len(gone) < len(keyOf); round++ {
			for id, d := range running {
				if _, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); err != nil {
					t.Fatal(err)
				}
				gone[id] = true
				delete(running, id)
			}
			now := q.Now()
			if _, err := q.Jobs.Promote(ctx, "rnd", now.Add(time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			ds, err := q.Jobs.Fetch(ctx, "rnd", queue.Priorities, 10, now.Add(time.Hour), now)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				running[d.ID] = d
			}
		}
		if len(gone) != len(keyOf) {
			t.Fatalf("%d of %d jobs never completed: a key is stuck (seed %d)", len(keyOf)-len(gone), len(keyOf), seed)
		}
		k := q.Keys("rnd")
		for _, key := range append(k.FlowKeys()[:6], k.FlowOf()) {
			if n, _ := q.Client().Exists(ctx, key).Result(); n != 0 {
				t.Errorf("%s is left after every job ended (seed %d)", key, seed)
			}
		}
	})
}
