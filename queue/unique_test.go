package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// uniqueJob is a job of route r holding unique key key until u.
func uniqueJob(t *testing.T, key string, u queue.Until) queue.NewJob {
	j := job(t, "r")
	j.UniqueKey, j.UniqueTTL, j.UniqueUntil = key, time.Minute, u
	return j
}

// enqueueUnique enqueues j and returns the holder the script answered.
func enqueueUnique(t *testing.T, q *queue.Queue, j queue.NewJob, now time.Time) string {
	t.Helper()
	h, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{j}, now)
	if err != nil {
		t.Fatal(err)
	}
	return h[0]
}

// holderOf reads who holds unique key key of route r ("" nobody).
func holderOf(t *testing.T, q *queue.Queue, key string) string {
	t.Helper()
	v, err := q.Client().Get(context.Background(), q.Keys("r").Unique(key)).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// uniqueEndings are the transitions a unique job can meet, each run on a
// job just enqueued (waiting) and returning with the transition done.
var uniqueEndings = []struct {
	name string
	run  func(t *testing.T, q *queue.Queue, id string, now time.Time)
}{
	{"start", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		fetchAll(t, q, 1, now, now.Add(time.Minute))
	}},
	{"complete", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		if ok, err := q.Jobs.Ack(context.Background(), d, []byte("ok"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
	}},
	{"retry", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		f := queue.Failure{Message: "boom", RetryAt: now.Add(time.Hour), Record: []byte("rec"), TTL: time.Minute}
		if out, err := q.Jobs.Fail(context.Background(), d, f, now); out != queue.EndRetrying || err != nil {
			t.Fatalf("fail = %v, %v; want a retry", out, err)
		}
	}},
	{"die", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		f := queue.Failure{Message: "boom", Final: true, Record: []byte("rec"), TTL: time.Minute}
		if out, err := q.Jobs.Fail(context.Background(), d, f, now); out != queue.EndDead || err != nil {
			t.Fatalf("fail = %v, %v; want dead", out, err)
		}
	}},
	{"die by a lost lease", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		fetchAll(t, q, 1, now, now.Add(time.Second))
		out, err := q.Jobs.Reap(context.Background(), "r", now.Add(2*time.Second), verdict(now))
		if err != nil || out[id] != queue.EndDead {
			t.Fatalf("reap = %v, %v; want %s dead", out, err, id)
		}
	}},
	{"cancel while running", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		if ok, err := q.Jobs.FinishCanceled(context.Background(), d, []byte("canceled"), time.Minute); !ok || err != nil {
			t.Fatalf("finish canceled = %v, %v", ok, err)
		}
	}},
	{"cancel while waiting", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		if out, err := q.Jobs.Cancel(context.Background(), id, []byte("canceled"), time.Minute); out != queue.Canceled || err != nil {
			t.Fatalf("cancel = %v, %v", out, err)
		}
	}},
	{"hand back at shutdown", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		if out, err := q.Jobs.Requeue(context.Background(), d, []byte("canceled"), time.Minute, now); out != queue.EndHandedBack || err != nil {
			t.Fatalf("requeue = %v, %v", out, err)
		}
	}},
	{"end canceled at shutdown", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		q.Client().SAdd(context.Background(), q.Keys("r").Cancels(), id)
		if out, err := q.Jobs.Requeue(context.Background(), d, []byte("canceled"), time.Minute, now); out != queue.EndCanceled || err != nil {
			t.Fatalf("requeue = %v, %v; want ended canceled", out, err)
		}
	}},
	{"delete", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		if err := q.Jobs.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}},
	{"cancel after a lost fetch", func(t *testing.T, q *queue.Queue, id string, now time.Time) {
		d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		q.Client().SAdd(context.Background(), q.Keys("r").Cancels(), id)
		lost := &queue.LostFetch{Route: "r", Token: d.Token, Until: now.Add(time.Minute)}
		out, err := q.Jobs.HandBack(context.Background(), lost, now, canceledVerdict)
		if err != nil || out.Back != 0 || len(out.Canceled) != 1 || out.Canceled[0].ID != id {
			t.Fatalf("hand back = %+v, %v; want %s ended canceled", out, err, id)
		}
	}},
}

// A unique key is held from the enqueue until the point of the job's life
// its until names, and freed by the very script of the transition that
// reaches that point: started by the start, completed by the completion
// alone, ended by a completion, a death or a cancel — a cancel of a job
// whose fetch's reply was lost (handback.lua) too; a retry keeps it.
func TestUnique_HeldUntilItsPointOfTheJobsLife(t *testing.T) {
	freed := map[queue.Until]map[string]bool{
		queue.UntilStarted: {"start": true, "complete": true, "retry": true, "die": true, "die by a lost lease": true, "cancel while running": true,
			"cancel while waiting": true, "delete": true, "hand back at shutdown": true, "end canceled at shutdown": true, "cancel after a lost fetch": true},
		queue.UntilCompleted: {"complete": true},
		queue.UntilEnded: {"complete": true, "die": true, "die by a lost lease": true, "cancel while running": true, "cancel while waiting": true,
			"delete": true, "end canceled at shutdown": true, "cancel after a lost fetch": true},
	}
	eachServer(t, func(t *testing.T, q *queue.Queue) {
		for _, until := range []queue.Until{queue.UntilStarted, queue.UntilCompleted, queue.UntilEnded} {
			for _, e := range uniqueEndings {
				t.Run(string(until)+"/"+e.name, func(t *testing.T) {
					q, err := queue.New(q.Client(), redistest.Namespace(t)) // a route of its own
					if err != nil {
						t.Fatal(err)
					}
					now := time.Now()
					j := uniqueJob(t, string(until)+"-"+e.name, until)
					j.MaxRetries = 0
					if e.name == "retry" {
						j.MaxRetries = 1
					}
					if h := enqueueUnique(t, q, j, now); h != "" {
						t.Fatalf("first enqueue answered holder %q", h)
					}
					if h := enqueueUnique(t, q, uniqueJob(t, j.UniqueKey, until), now); h != j.ID {
						t.Fatalf("second enqueue answered holder %q; want %s", h, j.ID)
					}
					e.run(t, q, j.ID, now)
					got := holderOf(t, q, j.UniqueKey)
					if want := freed[until][e.name]; want != (got == "") {
						t.Fatalf("after %s, the key held until %s is held by %q; want freed %v", e.name, until, got, want)
					}
					if got == "" {
						if h := enqueueUnique(t, q, uniqueJob(t, j.UniqueKey, until), now); h != "" {
							t.Fatalf("enqueue after the key was freed answered holder %q", h)
						}
					}
				})
			}
		}
	})
}

// A transition frees a key only while its value is the job's own id: a
// job whose key expired and passed to another job frees nothing when it
// ends, and a replay of a dead job takes its key back, or is refused
// naming the job that took it since.
func TestUnique_OnlyTheHolderFreesAndReplayTakesItBack(t *testing.T) {
	eachServer(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		a := uniqueJob(t, "k", queue.UntilEnded)
		a.MaxRetries = 0
		enqueueUnique(t, q, a, now)
		q.Client().Del(ctx, q.Keys("r").Unique("k")) // its ttl ran out
		b := uniqueJob(t, "k", queue.UntilEnded)
		b.RunAt = now.Add(time.Hour)
		if h := enqueueUnique(t, q, b, now); h != "" {
			t.Fatalf("enqueue after the key expired answered holder %q", h)
		}
		d := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		f := queue.Failure{Message: "boom", Final: true, Record: []byte("rec"), TTL: time.Minute}
		if out, err := q.Jobs.Fail(ctx, d, f, now); out != queue.EndDead || err != nil {
			t.Fatalf("fail = %v, %v", out, err)
		}
		if got := holderOf(t, q, "k"); got != b.ID {
			t.Fatalf("the stale holder's death left the key to %q; want %s", got, b.ID)
		}
		err := q.Ops.Replay(ctx, a.ID)
		var held *queue.KeyHeldError
		if !errors.As(err, &held) || held.Holder != b.ID || !errors.Is(err, queue.ErrKeyHeld) {
			t.Fatalf("replay while another job holds the key = %v; want a KeyHeldError naming %s", err, b.ID)
		}
		if err := q.Jobs.Delete(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if got := holderOf(t, q, "k"); got != "" {
			t.Fatalf("the holder's delete left the key to %q", got)
		}
		if err := q.Ops.Replay(ctx, a.ID); err != nil {
			t.Fatalf("replay with the key free = %v", err)
		}
		if got := holderOf(t, q, "k"); got != a.ID {
			t.Fatalf("replay left the key to %q; want it taken back by %s", got, a.ID)
		}
		if ttl := q.Client().PTTL(ctx, q.Keys("r").Unique("k")).Val(); ttl <= 0 || ttl > time.Minute {
			t.Fatalf("the key taken back has ttl %s; want the job's own (1m)", ttl)
		}
	})
}

// A job that expires before it started (expire.lua, from the sweep or from
// a fetch that set it aside) frees a key held until started or ended, so
// the next enqueue of the key makes a job; a key held until completed stays
// with the expired job until its ttl, as after a death or a cancel.
func TestUnique_AnExpiryFreesTheKeyHeldUntilStartedOrEnded(t *testing.T) {
	eachServer(t, func(t *testing.T, q *queue.Queue) {
		for _, until := range []queue.Until{queue.UntilStarted, queue.UntilCompleted, queue.UntilEnded} {
			for _, by := range []string{"sweep", "fetch"} {
				t.Run(string(until)+"/"+by, func(t *testing.T) {
					ctx := context.Background()
					q, err := queue.New(q.Client(), redistest.Namespace(t)) // a route of its own
					if err != nil {
						t.Fatal(err)
					}
					now := time.Now()
					j := uniqueJob(t, "expiring", until)
					j.ExpireAt = now.Add(time.Second)
					if h := enqueueUnique(t, q, j, now); h != "" {
						t.Fatalf("first enqueue answered holder %q", h)
					}
					later := now.Add(2 * time.Second)
					if by == "sweep" {
						got, err := q.Jobs.ExpireDue(ctx, "r", later)
						if err != nil || len(got) != 1 || got[0].ID != j.ID {
							t.Fatalf("sweep = %v, %v; want %s expired", got, err, j.ID)
						}
					} else if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 4, later.Add(time.Minute), later); err != nil || len(ds) != 0 {
						t.Fatalf("fetch = %d jobs, %v; want the expired one set aside", len(ds), err)
					}
					if n, _ := q.Client().ZCard(ctx, q.Keys("r").Expiry()).Result(); n != 0 {
						t.Fatalf("the job did not end expired: %d entries in the expiry set", n)
					}
					got := holderOf(t, q, j.UniqueKey)
					if want := until != queue.UntilCompleted; want != (got == "") {
						t.Fatalf("after the expiry, the key held until %s is held by %q; want freed %v", until, got, want)
					}
					next := uniqueJob(t, j.UniqueKey, until)
					if h := enqueueUnique(t, q, next, later); until != queue.UntilCompleted && h != "" {
						t.Fatalf("enqueue after the expiry answered holder %q; want a new job", h)
					} else if until == queue.UntilCompleted && h != j.ID {
						t.Fatalf("enqueue after the expiry answered holder %q; want %s (held until completed)", h, j.ID)
					}
				})
			}
		}
	})
}

// captureScripts records the arguments of every script call the queue's
// client sends, so that a test can send one again as a client retry would.
type captureScripts struct{ calls [][]any }

func (c *captureScripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *captureScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c *captureScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			c.calls = append(c.calls, cmd.Args())
		}
		return next(ctx, cmd)
	}
}

// A ready job with a unique key is light (no hash of its own); its enqueue
// resent after the job started — its key, held until started, already
// freed — must answer "written" again and write nothing: no second copy of
// the job, no key taken back.
func TestUnique_ResentEnqueueOfAStartedJobWritesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		capture := &captureScripts{}
		q.Client().AddHook(capture)
		j := uniqueJob(t, "k", queue.UntilStarted)
		if got := enqueueUnique(t, q, j, time.Now()); got != "" {
			t.Fatalf("enqueue answered %q", got)
		}
		sent := capture.calls[len(capture.calls)-1]
		if ok, _ := q.Client().Exists(ctx, q.Keys("r").Job(j.ID)).Result(); ok != 0 {
			t.Fatal("a ready unique job got a hash of its own; want a light job")
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, time.Now().Add(time.Minute), time.Now())
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %d, %v", len(ds), err)
		}
		if ds[0].UniqueKey() != "k" {
			t.Fatalf("the dispatch names unique key %q, want k", ds[0].UniqueKey())
		}
		if h := holderOf(t, q, "k"); h != "" {
			t.Fatalf("key held until started is still held by %s after the start", h)
		}
		reply, err := plainClient(t, q).Do(ctx, sent...).StringSlice()
		if err != nil || len(reply) != 1 || reply[0] != "" {
			t.Fatalf("the resent enqueue answered %q, %v; want [\"\"] (written)", reply, err)
		}
		wantPlace(t, q, "r", j.ID, "leased")
		if h := holderOf(t, q, "k"); h != "" {
			t.Fatalf("the resent enqueue took the key back for %s", h)
		}
	})
}

// A unique key of another type (garbage) refuses the whole enqueue with an
// error naming it, and leaves nothing behind: not the job, not the key of
// another job of the same call.
func TestUnique_GarbageUnderAKeyRefusesTheCallAndLeavesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.Client().HSet(ctx, q.Keys("r").Unique("bad"), "x", "y").Err(); err != nil {
			t.Fatal(err)
		}
		good, bad := uniqueJob(t, "good", queue.UntilEnded), uniqueJob(t, "bad", queue.UntilEnded)
		_, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{good, bad}, time.Now())
		if err == nil || !strings.Contains(err.Error(), q.Keys("r").Unique("bad")) {
			t.Fatalf("enqueue = %v; want an error naming the garbage key", err)
		}
		if h := holderOf(t, q, "good"); h != "" {
			t.Fatalf("the refused call left key good held by %s", h)
		}
		wantPlace(t, q, "r", good.ID, "")
		wantPlace(t, q, "r", bad.ID, "")
	})
}

// roundTrips counts the calls the queue's client sends: a pipeline is one.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// A fetch of several jobs whose keys are held until they start frees every
// key in one more round trip, not one per job.
func TestUnique_AFetchFreesTheKeysHeldUntilStartedInOneRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		trips := &roundTrips{}
		q.Client().AddHook(trips)
		fetch := func(keys ...string) int64 {
			for _, key := range keys {
				if got := enqueueUnique(t, q, uniqueJob(t, key, queue.UntilStarted), time.Now()); got != "" {
					t.Fatalf("enqueue %s answered %q", key, got)
				}
			}
			before := trips.n.Load()
			ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, len(keys), time.Now().Add(time.Minute), time.Now())
			if err != nil || len(ds) != len(keys) {
				t.Fatalf("fetch = %d, %v", len(ds), err)
			}
			return trips.n.Load() - before
		}
		fetch("warm") // the scripts loaded on the server, the route noted
		if n := fetch("a", "b", "c"); n > 2 {
			t.Errorf("the fetch of 3 jobs held until started took %d round trips; want the fetch and one for their keys", n)
		}
		for _, key := range []string{"a", "b", "c"} {
			if h := holderOf(t, q, key); h != "" {
				t.Errorf("key %s still held by %s after its job started", key, h)
			}
		}
	})
}
