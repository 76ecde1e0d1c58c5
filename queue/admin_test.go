package queue_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// listen subscribes to channel on a client of its own and returns a function
// that waits, at most two seconds, for the next message's payload.
func listen(t *testing.T, q *queue.Queue, channel string) func() string {
	t.Helper()
	ctx := context.Background()
	sub := plainClient(t, q).Subscribe(ctx, channel)
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(ctx); err != nil { // the subscription is in place
		t.Fatal(err)
	}
	return func() string {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		m, err := sub.ReceiveMessage(wctx)
		if err != nil {
			t.Fatalf("no message on %s: %v", channel, err)
		}
		return m.Payload
	}
}

// waiting enqueues on route r one light job (pending), one job with a hash of
// its own that is pending (delayed, then promoted), and one scheduled job.
func waiting(t *testing.T, q *queue.Queue, now time.Time) (light, heavy, scheduled string) {
	t.Helper()
	ctx := context.Background()
	l, h, s := job(t, "r"), job(t, "r"), job(t, "r")
	h.RunAt, s.RunAt = now.Add(time.Millisecond), now.Add(time.Hour)
	if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{l, h, s}, now); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); n != 1 || err != nil {
		t.Fatalf("promote = %d, %v", n, err)
	}
	return l.ID, h.ID, s.ID
}

// wantNoKeyOf fails if a key of the namespace names id, but its result key
// when result is set.
func wantNoKeyOf(t *testing.T, q *queue.Queue, id string, result bool) {
	t.Helper()
	for _, key := range keysUnder(t, q) {
		if strings.Contains(key, id) && !(result && key == q.Keys("r").Result(id)) {
			t.Fatalf("key %s is left of job %s", key, id)
		}
	}
	if ok, _ := q.Client().HExists(context.Background(), q.Keys("r").Payloads(), id).Result(); ok {
		t.Fatalf("the payload of job %s is left", id)
	}
}

func TestPause_PausedRouteIsFetchedByNobodyAndResumeWakesWorkers(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		if err := q.Ops.Pause(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if err := q.Ops.Pause(ctx, "r"); err != nil {
			t.Fatalf("pausing a paused route: %v", err)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.High, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatalf("enqueue on a paused route: %v", err)
		}
		if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now); len(ds) != 0 || err != nil {
			t.Fatalf("fetch from a paused route = %d jobs, %v; want none", len(ds), err)
		}
		if ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"t"}, 10, now.Add(time.Minute), now); len(ds) != 0 || err != nil {
			t.Fatalf("typed fetch from a paused route = %d jobs, %v; want none", len(ds), err)
		}
		paused, err := q.Ops.PausedRoutes(ctx, []string{"r", "other"})
		if err != nil || !paused["r"] || paused["other"] || len(paused) != 2 {
			t.Fatalf("paused routes = %v, %v; want r only", paused, err)
		}
		if err := q.Ops.Pause(ctx, "bad route"); err == nil {
			t.Fatal("a route that cannot exist was paused")
		}

		wake := listen(t, q, q.Keys("r").WakeChannel())
		if err := q.Ops.Resume(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		wake()
		if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now); len(ds) != 2 || err != nil {
			t.Fatalf("fetch once resumed = %d jobs, %v; want both", len(ds), err)
		}
		if paused, _ := q.Ops.PausedRoutes(ctx, []string{"r"}); paused["r"] {
			t.Fatal("r is still paused after Resume")
		}
	})
}

// Anything at the paused key pauses the route: a key of another type (by
// hand, by a foreign tool) is not taken for "not paused".
func TestPause_PausedKeyOfAnyTypePausesAndResumeClearsIt(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		q.Client().HSet(ctx, q.Keys("r").Paused(), "by", "hand")
		if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now); len(ds) != 0 || err != nil {
			t.Fatalf("fetch = %d jobs, %v; want none", len(ds), err)
		}
		if err := q.Ops.Resume(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now); len(ds) != 1 || err != nil {
			t.Fatalf("fetch once resumed = %d jobs, %v; want one", len(ds), err)
		}
	})
}

func TestDelete_PendingAndScheduledJobsGoForGood(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		light, heavy, scheduled := waiting(t, q, now)
		keep := job(t, "r")
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{keep}, now); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{light, heavy, scheduled} {
			if err := q.Jobs.Delete(ctx, id); err != nil {
				t.Fatalf("delete %s: %v", id, err)
			}
			wantPlace(t, q, "r", id, "")
			wantNoKeyOf(t, q, id, false)
			if _, err := q.Jobs.Lookup(ctx, id); !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("lookup of a deleted job: %v, want ErrNotFound", err)
			}
		}
		wantPlace(t, q, "r", keep.ID, queue.Normal)
		if s, _ := q.Ops.Stats(ctx, "r"); s["deleted"] != 3 {
			t.Fatalf("deleted counter = %d, want 3", s["deleted"])
		}
		if err := q.Jobs.Delete(ctx, light); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("a second delete: %v, want ErrNotFound", err)
		}
	})
}

// Delete and Cancel act only on jobs that wait (and Cancel on running ones);
// any other state is refused with an error naming it, and nothing changes.
func TestDelete_RefusesAProcessingJobNamingItsState(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, q *queue.Queue, now time.Time) string
		cancel bool
		errIs  error
		errHas string
	}{
		{"delete of a processing job", func(t *testing.T, q *queue.Queue, now time.Time) string {
			return leaseLight(t, q, 1, now, now.Add(time.Minute))[0].ID
		}, false, queue.ErrWrongState, "processing"},
		{"delete of a dead job", func(t *testing.T, q *queue.Queue, now time.Time) string {
			return deadJob(t, q, now)
		}, false, queue.ErrWrongState, "dead-lettered"},
		{"cancel of a dead job", func(t *testing.T, q *queue.Queue, now time.Time) string {
			return deadJob(t, q, now)
		}, true, queue.ErrWrongState, "dead-lettered"},
		{"cancel of a completed job", func(t *testing.T, q *queue.Queue, now time.Time) string {
			d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
			if ok, err := q.Jobs.Ack(context.Background(), d, []byte("done"), time.Minute); !ok || err != nil {
				t.Fatalf("ack = %v, %v", ok, err)
			}
			return d.ID
		}, true, queue.ErrWrongState, "completed"},
		{"delete of an unknown job", func(t *testing.T, q *queue.Queue, now time.Time) string {
			return queue.NewID("r", now)
		}, false, queue.ErrNotFound, ""},
		{"cancel of a job stored but in no list", func(t *testing.T, q *queue.Queue, now time.Time) string {
			j := job(t, "r")
			if _, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
			q.Client().Del(context.Background(), q.Keys("r").List(queue.Normal))
			return j.ID
		}, true, queue.ErrWrongState, "in no ready list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				id := c.setup(t, q, time.Now())
				before := redistest.Snapshot(t, plainClient(t, q), q.Namespace())
				var err error
				if c.cancel {
					_, err = q.Jobs.Cancel(ctx, id, []byte("canceled"), time.Minute)
				} else {
					err = q.Jobs.Delete(ctx, id)
				}
				if !errors.Is(err, c.errIs) || !strings.Contains(err.Error(), c.errHas) || !strings.Contains(err.Error(), id) {
					t.Fatalf("err = %v; want %v naming the job and %q", err, c.errIs, c.errHas)
				}
				if d := redistest.Diff(before, redistest.Snapshot(t, plainClient(t, q), q.Namespace())); d != "" {
					t.Fatalf("a refused action wrote:\n%s", d)
				}
			})
		})
	}
}

func TestCancel_WaitingJobIsRemovedAndItsWaitersWake(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		light, heavy, scheduled := waiting(t, q, now)
		for _, id := range []string{light, heavy, scheduled} {
			record := []byte("canceled " + id)
			result := listen(t, q, queue.ResultChannel(q.Namespace(), id))
			out, err := q.Jobs.Cancel(ctx, id, record, time.Minute)
			if out != queue.Canceled || err != nil {
				t.Fatalf("cancel %s = %v, %v; want Canceled", id, out, err)
			}
			if got := result(); got != string(record) {
				t.Fatalf("announced %q, want the record", got)
			}
			if b, err := q.Jobs.Result(ctx, id); string(b) != string(record) || err != nil {
				t.Fatalf("result = %q, %v; want the record", b, err)
			}
			if ttl, _ := q.Client().PTTL(ctx, q.Keys("r").Result(id)).Result(); ttl <= 0 || ttl > time.Minute {
				t.Fatalf("the record expires in %v, want within the minute given", ttl)
			}
			wantPlace(t, q, "r", id, "")
			wantNoKeyOf(t, q, id, true)
		}
		if s, _ := q.Ops.Stats(ctx, "r"); s["canceled"] != 3 {
			t.Fatalf("canceled counter = %d, want 3", s["canceled"])
		}
	})
}

func TestCancel_RunningJobIsRequestedAndFinishedAsCanceled(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		k := q.Keys("r")
		ds := append(leaseLight(t, q, 2, now, now.Add(time.Minute)), leaseHeavy(t, q, 1, now, now.Add(time.Minute))...)
		running := []string{ds[0].ID, ds[1].ID, ds[2].ID}
		asked := listen(t, q, k.CancelChannel())
		for _, d := range []*queue.Dispatch{ds[0], ds[2]} {
			out, err := q.Jobs.Cancel(ctx, d.ID, []byte("unused"), time.Minute)
			if out != queue.CancelRequested || err != nil {
				t.Fatalf("cancel of a running job = %v, %v; want CancelRequested", out, err)
			}
			if got := asked(); got != d.ID {
				t.Fatalf("the cancel channel said %q, want %s", got, d.ID)
			}
			wantPlace(t, q, "r", d.ID, "leased")
		}
		got, err := q.Jobs.CancelRequests(ctx, "r", running)
		if err != nil || !slices.Equal(got, []string{ds[0].ID, ds[2].ID}) {
			t.Fatalf("cancel requests = %v, %v; want the two canceled", got, err)
		}

		stale := *ds[0]
		stale.Token = "stale"
		before := redistest.Snapshot(t, plainClient(t, q), q.Namespace())
		if ok, err := q.Jobs.FinishCanceled(ctx, &stale, []byte("canceled"), time.Minute); ok || err != nil {
			t.Fatalf("finish with a stale token = %v, %v; want no change", ok, err)
		}
		if d := redistest.Diff(before, redistest.Snapshot(t, plainClient(t, q), q.Namespace())); d != "" {
			t.Fatalf("a stale finish wrote:\n%s", d)
		}
		for _, d := range []*queue.Dispatch{ds[0], ds[2]} {
			result := listen(t, q, queue.ResultChannel(q.Namespace(), d.ID))
			if ok, err := q.Jobs.FinishCanceled(ctx, d, []byte("canceled"), time.Minute); !ok || err != nil {
				t.Fatalf("finish canceled = %v, %v", ok, err)
			}
			if got := result(); got != "canceled" {
				t.Fatalf("announced %q, want the record", got)
			}
			if b, err := q.Jobs.Result(ctx, d.ID); string(b) != "canceled" || err != nil {
				t.Fatalf("result = %q, %v", b, err)
			}
			wantPlace(t, q, "r", d.ID, "")
			wantNoKeyOf(t, q, d.ID, true)
		}
		if n, _ := q.Client().SCard(ctx, k.Cancels()).Result(); n != 0 {
			t.Fatalf("%d cancel requests left after both finished", n)
		}
		if ok, err := q.Jobs.Ack(ctx, ds[1], []byte("ok"), time.Minute); !ok || err != nil {
			t.Fatalf("ack of the job nobody canceled = %v, %v", ok, err)
		}
		active, _ := q.Client().ZCard(ctx, k.Active()).Result()
		groups, _ := q.Client().HLen(ctx, k.Groups()).Result()
		if active != 0 || groups != 0 {
			t.Fatalf("%d lease groups active, %d counted, after every job settled", active, groups)
		}
		if s, _ := q.Ops.Stats(ctx, "r"); s["canceled"] != 2 || s["processed"] != 1 {
			t.Fatalf("counters %v; want 2 canceled, 1 processed", s)
		}
	})
}

// A cancel request stands for the run it was made against: when that run
// ends otherwise (completed, failed into a retry), the request goes with the
// next CancelRequests, and the job's next run is not canceled. A run whose
// lease expires with its request pending ends canceled when reaped, and its
// request goes with it.
func TestCancelRequests_RequestOfARunThatEndedOtherwiseIsDropped(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		until := now.Add(time.Minute)
		k := q.Keys("r")
		ds := leaseLight(t, q, 3, now, until)
		for _, d := range ds {
			if out, err := q.Jobs.Cancel(ctx, d.ID, []byte("unused"), time.Minute); out != queue.CancelRequested || err != nil {
				t.Fatalf("cancel = %v, %v", out, err)
			}
		}
		if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		if out, err := q.Jobs.Fail(ctx, ds[1], queue.Failure{Message: "boom", RetryAt: now, TTL: time.Minute}, now); out != queue.EndRetrying || err != nil {
			t.Fatalf("fail = %v, %v", out, err)
		}
		if got, err := q.Jobs.Reap(ctx, "r", until, verdict(now)); got[ds[2].ID] != queue.EndCanceled || err != nil {
			t.Fatalf("reap = %v, %v; want the job asked to cancel ended canceled", got, err)
		}
		if got, err := q.Jobs.CancelRequests(ctx, "r", nil); len(got) != 0 || err != nil {
			t.Fatalf("cancel requests = %v, %v; want none", got, err)
		}
		if n, _ := q.Client().SCard(ctx, k.Cancels()).Result(); n != 0 {
			t.Fatalf("%d cancel requests outlived their runs", n)
		}
		if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		again, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, until, now)
		if err != nil || len(again) != 1 || again[0].ID != ds[1].ID {
			t.Fatalf("fetch of the retries = %d, %v; want the failed job's retry alone", len(again), err)
		}
		if got, err := q.Jobs.CancelRequests(ctx, "r", []string{again[0].ID}); len(got) != 0 || err != nil {
			t.Fatalf("the retries' cancel requests = %v, %v; want none", got, err)
		}
	})
}

// deadOf dead-letters, by hand, one job of task name that died at diedAt.
func deadOf(t *testing.T, q *queue.Queue, name string, diedAt time.Time) string {
	t.Helper()
	ctx := context.Background()
	k := q.Keys("r")
	id := queue.NewID("r", diedAt)
	at := strconv.FormatInt(diedAt.UnixMilli(), 10)
	if err := q.Client().HSet(ctx, k.Job(id), "n", name, "p", "normal", "m", "0", "c", at, "s", "x", "f", at, "err", "boom", "e0", string(env(t))).Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.Client().ZAdd(ctx, k.Dead(), redis.Z{Score: float64(diedAt.UnixMilli()), Member: id}).Err(); err != nil {
		t.Fatal(err)
	}
	return id
}

// ReplayDead and PurgeDead read the dead-letter set a page at a time: 501
// jobs of another task ahead of the ones asked for must not hide them.
func TestReplayDead_OnlyTheTaskAskedIsReplayedPastAPageOfOthers(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now().Add(-time.Hour)
		var others []string
		for i := range 501 {
			others = append(others, deadOf(t, q, "b", now.Add(time.Duration(i)*time.Millisecond)))
		}
		a1, a2 := deadOf(t, q, "a", now.Add(time.Second)), deadOf(t, q, "a", now.Add(2*time.Second))
		n, err := q.Ops.ReplayDead(ctx, "r", "a")
		if n != 2 || err != nil {
			t.Fatalf("replay dead of task a = %d, %v; want 2", n, err)
		}
		wantPlace(t, q, "r", a1, queue.Normal)
		wantPlace(t, q, "r", a2, queue.Normal)
		wantPlace(t, q, "r", others[500], "dead")
		if n, _ := q.Client().ZCard(ctx, q.Keys("r").Dead()).Result(); n != 501 {
			t.Fatalf("%d jobs left dead, want the 501 of task b", n)
		}
		if n, err := q.Ops.ReplayDead(ctx, "r", ""); n != 501 || err != nil {
			t.Fatalf("replay dead of every task = %d, %v; want 501", n, err)
		}
	})
}

func TestPurgeDead_OnlyTheTaskAskedAndOldEnoughGoPastAPageOfOthers(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		old := time.Now().Add(-time.Hour)
		cutoff := old.Add(time.Minute)
		for i := range 501 {
			deadOf(t, q, "b", old.Add(time.Duration(i)*time.Millisecond))
		}
		a1, a2 := deadOf(t, q, "a", old.Add(time.Second)), deadOf(t, q, "a", old.Add(2*time.Second))
		young := deadOf(t, q, "a", cutoff.Add(time.Second))
		n, err := q.Ops.PurgeDead(ctx, "r", "a", cutoff)
		if n != 2 || err != nil {
			t.Fatalf("purge dead of task a = %d, %v; want the 2 old enough", n, err)
		}
		wantNoKeyOf(t, q, a1, false)
		wantNoKeyOf(t, q, a2, false)
		wantPlace(t, q, "r", young, "dead")
		if n, err := q.Ops.Purge(ctx, "r", cutoff); n != 501 || err != nil {
			t.Fatalf("purge of every task = %d, %v; want the 501 of task b", n, err)
		}
		wantPlace(t, q, "r", young, "dead")
	})
}

// evalCount counts the script calls a client makes.
type evalCount struct{ n atomic.Int32 }

func (h *evalCount) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *evalCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *evalCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// A typed fetch reads a list window by window; on a paused route it stops at
// the first claim instead of reading the whole list for nothing.
func TestPause_TypedFetchStopsAtTheFirstWindowOfAPausedRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		jobs := make([]queue.NewJob, 600)
		for i := range jobs {
			jobs[i] = job(t, "r")
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
			t.Fatal(err)
		}
		if err := q.Ops.Pause(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		// A first call loads claim.lua: a second one is not answered NOSCRIPT.
		if _, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"other"}, 10, now.Add(time.Minute), now); err != nil {
			t.Fatal(err)
		}
		calls := &evalCount{}
		q.Client().AddHook(calls)
		if ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"other"}, 10, now.Add(time.Minute), now); len(ds) != 0 || err != nil {
			t.Fatalf("typed fetch = %d, %v", len(ds), err)
		}
		// One fetch of the keyed jobs (fetch.lua finds the route paused),
		// then one claim.
		if n := calls.n.Load(); n != 2 {
			t.Fatalf("%d script calls on a paused route, want 2: the keyed fetch and one claim", n)
		}
	})
}
