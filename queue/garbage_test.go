package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// Tests that Redis may hold anything: a script that meets garbage — an entry
// that is not a job, a field that is not a number, a key of the wrong type —
// handles that one entry (dead-letters it with the reason, or drops what is
// not a job) and goes on; it never leaves a job in no place, never skips one
// for ever, and never raises after a write.

// spoiler corrupts one leased job d (or plants an entry beside it) and
// returns the id the case is about.
type spoiler func(t *testing.T, q *queue.Queue, d *queue.Dispatch) string

func hset(field, value string) spoiler {
	return func(t *testing.T, q *queue.Queue, d *queue.Dispatch) string {
		if err := q.Client().HSet(context.Background(), q.Keys("r").Job(d.ID), field, value).Err(); err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
}

func hdel(field string) spoiler {
	return func(t *testing.T, q *queue.Queue, d *queue.Dispatch) string {
		if err := q.Client().HDel(context.Background(), q.Keys("r").Job(d.ID), field).Err(); err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
}

// jobKeyHolds replaces d's job key with a value of another type.
func jobKeyHolds(kind string) spoiler {
	return func(t *testing.T, q *queue.Queue, d *queue.Dispatch) string {
		ctx := context.Background()
		key := q.Keys("r").Job(d.ID)
		rdb := q.Client()
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		var err error
		switch kind {
		case "string":
			err = rdb.Set(ctx, key, "junk", 0).Err()
		case "list":
			err = rdb.RPush(ctx, key, "junk").Err()
		}
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
}

// emptyIDLeased leases an entry with an empty id in d's lease group, as a
// fetch that popped one from a ready list did.
func emptyIDLeased(t *testing.T, q *queue.Queue, d *queue.Dispatch) string {
	ctx := context.Background()
	k := q.Keys("r")
	if err := q.Client().HSet(ctx, k.Leases(), "", d.Token).Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.Client().HIncrBy(ctx, k.Groups(), d.Token, 1).Err(); err != nil {
		t.Fatal(err)
	}
	return ""
}

// warnings collects what q reports through OnWarning from now on.
func warnings(q *queue.Queue) func() []string {
	var mu sync.Mutex
	var got []string
	q.OnWarning(func(msg string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprint(append([]any{msg, " "}, args...)...))
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

func TestReap_GarbageEntryDoesNotStopTheRest(t *testing.T) {
	cases := []struct {
		name      string
		heavy     bool // the job has a hash of its own (else light)
		spoil     spoiler
		want      queue.Ending
		place     string
		errHas    string // in the job's error, when it is dead
		asideType string // what the garbage key holds afterwards ("" none)
	}{
		{name: "an empty id is leased", spoil: emptyIDLeased, want: queue.EndOrphan},
		{name: "attempts not a number", heavy: true, spoil: hset("a", "x"), want: queue.EndCorrupt, place: "dead", errHas: "field a"},
		{name: "attempts negative", heavy: true, spoil: hset("a", "-1"), want: queue.EndCorrupt, place: "dead", errHas: "field a"},
		{name: "max retries not a whole number", heavy: true, spoil: hset("m", "1e3"), want: queue.EndCorrupt, place: "dead", errHas: "field m"},
		{name: "max retries missing", heavy: true, spoil: hdel("m"), want: queue.EndCorrupt, place: "dead", errHas: "field m"},
		{name: "job key is a string", heavy: true, spoil: jobKeyHolds("string"), want: queue.EndCorrupt, place: "dead", errHas: "not a job hash", asideType: "string"},
		{name: "job key is a list", heavy: true, spoil: jobKeyHolds("list"), want: queue.EndCorrupt, place: "dead", errHas: "not a job hash", asideType: "list"},
		{name: "light job whose job key is a string", spoil: jobKeyHolds("string"), want: queue.EndRetrying, place: "scheduled", asideType: "string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				now := time.Now()
				until := now.Add(time.Minute)
				lease := leaseLight
				if c.heavy {
					lease = leaseHeavy
				}
				ds := lease(t, q, 2, now, until) // the victim and a healthy neighbour, one lease group
				id := c.spoil(t, q, ds[0])
				warned := warnings(q)
				got, err := q.Jobs.Reap(ctx, "r", until, verdict(until))
				if err != nil {
					t.Fatalf("reap failed on the bad entry: %v", err)
				}
				if got[ds[1].ID] != queue.EndRetrying {
					t.Fatalf("the healthy job's outcome is %v (all: %v), want it retried", got[ds[1].ID], got)
				}
				if got[id] != c.want {
					t.Fatalf("the bad entry's outcome is %v (all: %v), want %v", got[id], got, c.want)
				}
				if w := warned(); len(w) != 1 {
					t.Fatalf("warnings %q; want one, for the bad entry", w)
				}
				wantPlace(t, q, "r", id, c.place)
				wantPlace(t, q, "r", ds[1].ID, "scheduled")
				if c.place == "dead" && !strings.Contains(jobError(t, q, "r", id), c.errHas) {
					t.Fatalf("the dead job's error %q does not say %q", jobError(t, q, "r", id), c.errHas)
				}
				if typ, _ := q.Client().Type(ctx, q.Keys("r").Garbage(id)).Result(); c.asideType != "" && typ != c.asideType {
					t.Fatalf("the garbage key holds a %q, want the job key's old %s", typ, c.asideType)
				}
				k := q.Keys("r")
				leases, _ := q.Client().HLen(ctx, k.Leases()).Result()
				active, _ := q.Client().ZCard(ctx, k.Active()).Result()
				if leases != 0 || active != 0 {
					t.Fatalf("after reaping %d leases and %d groups are left", leases, active)
				}
			})
		})
	}
}

// A job whose attempts the reaper keeps losing the race for (here the decide
// callback changes them under it, every pass) is left alone — and 100 such
// lease groups, the oldest, do not hide a newer expired group from the
// reaper.
func TestReap_PagesPastGroupsItCannotReapNow(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		old, later := now.Add(time.Minute), now.Add(2*time.Minute)
		jobs := make([]queue.NewJob, 100)
		for i := range jobs {
			jobs[i] = job(t, "r")
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
			t.Fatal(err)
		}
		stuck := map[string]bool{}
		for range jobs { // one lease group each
			ds := fetchAll(t, q, 1, now, old)
			stuck[ds[0].ID] = true
		}
		fresh := leaseLight(t, q, 1, now, later)[0]
		raced := func(e queue.Expired) queue.Verdict {
			if stuck[e.ID] {
				if err := q.Client().HIncrBy(ctx, q.Keys("r").Job(e.ID), "a", 1).Err(); err != nil {
					t.Error(err)
				}
			}
			return verdict(later)(e)
		}
		got, err := q.Jobs.Reap(ctx, "r", later, raced)
		if err != nil {
			t.Fatal(err)
		}
		if got[fresh.ID] != queue.EndRetrying {
			t.Fatalf("the newer group's job was not reaped behind 100 older groups it could not reap: %v", got)
		}
		for id, o := range got {
			if stuck[id] {
				t.Fatalf("job %s reaped (%v) although its attempts changed under the reaper", id, o)
			}
		}
	})
}

func TestFail_GarbageIsDeadLetteredNamingTheField(t *testing.T) {
	cases := []struct {
		name   string
		heavy  bool
		spoil  spoiler
		want   queue.Ending
		place  string
		errHas []string
	}{
		{name: "attempts not a number", heavy: true, spoil: hset("a", "x"), want: queue.EndDead, place: "dead", errHas: []string{"field a", "boom"}},
		{name: "max retries not a number", heavy: true, spoil: hset("m", "x"), want: queue.EndDead, place: "dead", errHas: []string{"field m", "boom"}},
		{name: "max retries missing", heavy: true, spoil: hdel("m"), want: queue.EndDead, place: "dead", errHas: []string{"field m", "boom"}},
		{name: "light payload with garbage max retries", spoil: func(t *testing.T, q *queue.Queue, d *queue.Dispatch) string {
			if err := q.Client().HSet(context.Background(), q.Keys("r").Payloads(), d.ID, "t|normal|x|0|\x81").Err(); err != nil {
				t.Fatal(err)
			}
			return d.ID
		}, want: queue.EndDead, place: "dead", errHas: []string{"boom"}},
		{name: "failed counter not a number", spoil: func(t *testing.T, q *queue.Queue, d *queue.Dispatch) string {
			if err := q.Client().HSet(context.Background(), q.Keys("r").Stats(), "failed", "x").Err(); err != nil {
				t.Fatal(err)
			}
			return d.ID
		}, want: queue.EndRetrying, place: "scheduled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				now := time.Now()
				lease := leaseLight
				if c.heavy {
					lease = leaseHeavy
				}
				d := lease(t, q, 1, now, now.Add(time.Minute))[0]
				id := c.spoil(t, q, d)
				out, err := q.Jobs.Fail(ctx, d, queue.Failure{Message: "boom", RetryAt: now, Record: []byte("rec"), TTL: time.Minute}, now)
				if err != nil || out != c.want {
					t.Fatalf("fail = %v, %v; want %v", out, err, c.want)
				}
				wantPlace(t, q, "r", id, c.place)
				for _, s := range c.errHas {
					if e := jobError(t, q, "r", id); !strings.Contains(e, s) {
						t.Fatalf("the job's error %q does not say %q", e, s)
					}
				}
				if c.place == "dead" {
					if b, err := q.Jobs.Result(ctx, id); err != nil || string(b) != "rec" {
						t.Fatalf("the dead job's failure record = %q, %v; want it stored", b, err)
					}
				}
				if s, _ := q.Ops.Stats(ctx, "r"); s["failed"] != 1 {
					t.Fatalf("failed counter = %d, want 1", s["failed"])
				}
			})
		})
	}
}

// What fail.lua cannot act on without leaving the job half-moved makes it
// refuse before its first write: the job stays leased, and the reaper
// recovers it once its lease expires.
func TestFail_RefusesBeforeWritingWhatTheReaperMustRecover(t *testing.T) {
	cases := []struct {
		name   string
		spoil  spoiler
		errHas string
		reaped queue.Ending
	}{
		{name: "job key is a string", spoil: jobKeyHolds("string"), errHas: "not a job hash", reaped: queue.EndRetrying},
		{name: "scheduled set is a string", spoil: func(t *testing.T, q *queue.Queue, d *queue.Dispatch) string {
			if err := q.Client().Set(context.Background(), q.Keys("r").Scheduled(), "junk", 0).Err(); err != nil {
				t.Fatal(err)
			}
			return d.ID
		}, errHas: "scheduled set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				now := time.Now()
				until := now.Add(time.Minute)
				d := leaseLight(t, q, 1, now, until)[0]
				c.spoil(t, q, d)
				before := redistest.Snapshot(t, plainClient(t, q), q.Namespace())
				_, err := q.Jobs.Fail(ctx, d, queue.Failure{Message: "boom", RetryAt: now, Record: []byte("rec"), TTL: time.Minute}, now)
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("fail err = %v; want a refusal naming %q", err, c.errHas)
				}
				if d := redistest.Diff(before, redistest.Snapshot(t, plainClient(t, q), q.Namespace())); d != "" {
					t.Fatalf("a refused fail wrote:\n%s", d)
				}
				if c.reaped != queue.EndStale {
					got, err := q.Jobs.Reap(ctx, "r", until, verdict(until))
					if err != nil || got[d.ID] != c.reaped {
						t.Fatalf("reap = %v, %v; want the job recovered", got, err)
					}
					wantPlace(t, q, "r", d.ID, "scheduled")
				}
			})
		})
	}
}

func TestPromote_DueJobThatCannotRunIsDeadLetteredNotLost(t *testing.T) {
	cases := []struct {
		name      string
		spoil     func(t *testing.T, q *queue.Queue, id string)
		place     string
		errHas    string
		asideType string
	}{
		{name: "priority missing", spoil: func(t *testing.T, q *queue.Queue, id string) {
			q.Client().HDel(context.Background(), q.Keys("r").Job(id), "p")
		}, place: "dead", errHas: "field p"},
		{name: "priority garbage", spoil: func(t *testing.T, q *queue.Queue, id string) {
			q.Client().HSet(context.Background(), q.Keys("r").Job(id), "p", "urgent")
		}, place: "dead", errHas: "field p"},
		{name: "job key is a string", spoil: func(t *testing.T, q *queue.Queue, id string) {
			k := q.Keys("r").Job(id)
			q.Client().Del(context.Background(), k)
			q.Client().Set(context.Background(), k, "junk", 0)
		}, place: "dead", errHas: "not a job hash", asideType: "string"},
		{name: "no job at all", spoil: func(t *testing.T, q *queue.Queue, id string) {
			q.Client().Del(context.Background(), q.Keys("r").Job(id))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				now := time.Now()
				bad, good := job(t, "r"), job(t, "r")
				bad.RunAt, good.RunAt = now.Add(time.Millisecond), now.Add(2*time.Millisecond)
				if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{bad, good}, now); err != nil {
					t.Fatal(err)
				}
				c.spoil(t, q, bad.ID)
				warned := warnings(q)
				moved, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second))
				if err != nil || moved != 1 {
					t.Fatalf("promote = %d, %v; want the good job moved", moved, err)
				}
				if w := warned(); len(w) != 1 || !strings.Contains(w[0], bad.ID) {
					t.Fatalf("warnings %q; want one, naming the bad job", w)
				}
				wantPlace(t, q, "r", good.ID, queue.Normal)
				wantPlace(t, q, "r", bad.ID, c.place)
				if c.place == "dead" && !strings.Contains(jobError(t, q, "r", bad.ID), c.errHas) {
					t.Fatalf("the dead job's error %q does not say %q", jobError(t, q, "r", bad.ID), c.errHas)
				}
				if typ, _ := q.Client().Type(ctx, q.Keys("r").Garbage(bad.ID)).Result(); c.asideType != "" && typ != c.asideType {
					t.Fatalf("the garbage key holds a %q, want %s", typ, c.asideType)
				}
				if n, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil || n != 0 {
					t.Fatalf("a second promote = %d, %v; want nothing left to do", n, err)
				}
			})
		})
	}
}

func TestRequeue_JobWithNoListToGoBackToStaysLeasedForTheReaper(t *testing.T) {
	cases := []struct {
		name   string
		heavy  bool
		spoil  spoiler
		errHas string
	}{
		{name: "priority missing", heavy: true, spoil: hdel("p"), errHas: "field p"},
		{name: "priority garbage", heavy: true, spoil: hset("p", "urgent"), errHas: "field p"},
		{name: "job key is a string", heavy: true, spoil: jobKeyHolds("string"), errHas: "not a job hash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				now := time.Now()
				until := now.Add(time.Minute)
				lease := leaseLight
				if c.heavy {
					lease = leaseHeavy
				}
				d := lease(t, q, 1, now, until)[0]
				c.spoil(t, q, d)
				before := redistest.Snapshot(t, plainClient(t, q), q.Namespace())
				out, err := q.Jobs.Requeue(ctx, d, []byte("canceled"), time.Minute, time.Now())
				if out == queue.EndHandedBack || err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("requeue = %v, %v; want a refusal naming %q", out, err, c.errHas)
				}
				if d := redistest.Diff(before, redistest.Snapshot(t, plainClient(t, q), q.Namespace())); d != "" {
					t.Fatalf("a refused requeue wrote:\n%s", d)
				}
				wantPlace(t, q, "r", d.ID, "leased")
				if got, err := q.Jobs.Reap(ctx, "r", until, verdict(until)); err != nil || got[d.ID] == queue.EndStale {
					t.Fatalf("reap = %v, %v; want the job recovered", got, err)
				}
			})
		})
	}
}

// A light job goes back by its payload: to normal when the payload's priority
// does not read, and to its priority's list when a job key of another type
// stands beside it.
func TestRequeue_LightJobGoesBackByItsPayload(t *testing.T) {
	cases := []struct {
		name, payload string
		jobKey        bool
		list          queue.Priority
	}{
		{name: "priority garbage", payload: "t|urgent|1|0|\x81", list: queue.Normal},
		{name: "job key is a string", payload: "t|high|1|0|\x81", jobKey: true, list: queue.High},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				now := time.Now()
				d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
				if err := q.Client().HSet(ctx, q.Keys("r").Payloads(), d.ID, c.payload).Err(); err != nil {
					t.Fatal(err)
				}
				if c.jobKey {
					q.Client().Set(ctx, q.Keys("r").Job(d.ID), "junk", 0)
				}
				if out, err := q.Jobs.Requeue(ctx, d, []byte("canceled"), time.Minute, time.Now()); out != queue.EndHandedBack || err != nil {
					t.Fatalf("requeue = %v, %v", out, err)
				}
				wantPlace(t, q, "r", d.ID, c.list)
			})
		})
	}
}

// deadJob makes one dead-lettered job with a hash of its own on route r.
func deadJob(t *testing.T, q *queue.Queue, now time.Time) string {
	t.Helper()
	d := leaseHeavy(t, q, 1, now, now.Add(time.Minute))[0]
	out, err := q.Jobs.Fail(context.Background(), d, queue.Failure{Message: "boom", Final: true, Record: []byte("rec"), TTL: time.Minute}, now)
	if err != nil || out != queue.EndDead {
		t.Fatalf("fail = %v, %v; want dead", out, err)
	}
	return d.ID
}

func TestReplay_JobThatCannotBeMadeReadyStaysDeadSayingWhy(t *testing.T) {
	cases := []struct {
		name   string
		spoil  func(t *testing.T, q *queue.Queue, id string)
		errHas string
	}{
		{name: "priority missing", spoil: func(t *testing.T, q *queue.Queue, id string) {
			q.Client().HDel(context.Background(), q.Keys("r").Job(id), "p")
		}, errHas: "field p"},
		{name: "priority garbage", spoil: func(t *testing.T, q *queue.Queue, id string) {
			q.Client().HSet(context.Background(), q.Keys("r").Job(id), "p", "urgent")
		}, errHas: "field p"},
		{name: "replay count garbage", spoil: func(t *testing.T, q *queue.Queue, id string) {
			q.Client().HSet(context.Background(), q.Keys("r").Job(id), "pn", "x")
		}, errHas: "field pn"},
		{name: "count of earlier runs negative", spoil: func(t *testing.T, q *queue.Queue, id string) {
			q.Client().HSet(context.Background(), q.Keys("r").Job(id), "pr", "-1")
		}, errHas: "field pr"},
		{name: "job key is a string", spoil: func(t *testing.T, q *queue.Queue, id string) {
			k := q.Keys("r").Job(id)
			q.Client().Del(context.Background(), k)
			q.Client().Set(context.Background(), k, "junk", 0)
		}, errHas: "not a job hash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				id := deadJob(t, q, time.Now())
				c.spoil(t, q, id)
				before := redistest.Snapshot(t, plainClient(t, q), q.Namespace())
				err := q.Ops.Replay(ctx, id)
				if err == nil || errors.Is(err, queue.ErrNotFound) || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("replay err = %v; want a refusal naming %q", err, c.errHas)
				}
				if d := redistest.Diff(before, redistest.Snapshot(t, plainClient(t, q), q.Namespace())); d != "" {
					t.Fatalf("a refused replay wrote:\n%s", d)
				}
				wantPlace(t, q, "r", id, "dead")
			})
		})
	}
}

// A dead-letter entry whose job is gone is dropped by the replay that finds
// it so (nothing else removes it), and a replayed counter that is not a
// number is reset.
func TestReplay_EntryWithoutAJobIsDroppedAndGarbageCounterReset(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		k := q.Keys("r")
		orphan, good := deadJob(t, q, now), deadJob(t, q, now)
		q.Client().Del(ctx, k.Job(orphan))
		q.Client().HSet(ctx, k.Stats(), "replayed", "x")
		if err := q.Ops.Replay(ctx, orphan); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("replay of an entry without a job: err = %v, want ErrNotFound", err)
		}
		if _, err := q.Client().ZScore(ctx, k.Dead(), orphan).Result(); err == nil {
			t.Fatal("the entry without a job is still in the dead-letter set")
		}
		if err := q.Ops.Replay(ctx, good); err != nil {
			t.Fatal(err)
		}
		wantPlace(t, q, "r", good, queue.Normal)
		if s, _ := q.Ops.Stats(ctx, "r"); s["replayed"] != 1 {
			t.Fatalf("replayed counter = %d, want reset to 1", s["replayed"])
		}
	})
}

// ReplayAll replays what it can, leaves what it cannot dead (and says so),
// drops entries without a job, and ends.
func TestReplayAll_BadJobStaysDeadAndTheRestAreReplayed(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		k := q.Keys("r")
		warned := warnings(q)
		noPrio, orphan, good := deadJob(t, q, now), deadJob(t, q, now), deadJob(t, q, now)
		q.Client().HDel(ctx, k.Job(noPrio), "p")
		q.Client().Del(ctx, k.Job(orphan))
		n, err := q.Ops.ReplayAll(ctx, "r")
		if err != nil || n != 1 {
			t.Fatalf("replay all = %d, %v; want the one good job", n, err)
		}
		wantPlace(t, q, "r", good, queue.Normal)
		wantPlace(t, q, "r", noPrio, "dead")
		wantPlace(t, q, "r", orphan, "")
		if w := warned(); len(w) != 2 || !strings.Contains(strings.Join(w, "\n"), "field p") {
			t.Fatalf("warnings %q; want one for each bad entry, naming the field", w)
		}
	})
}

func TestPurge_DeletesWhatWasSetAsideWithTheStub(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		k := q.Keys("r")
		j := job(t, "r")
		j.RunAt = now.Add(time.Millisecond)
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now); err != nil {
			t.Fatal(err)
		}
		q.Client().Del(ctx, k.Job(j.ID))
		q.Client().Set(ctx, k.Job(j.ID), "junk", 0)
		if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		wantPlace(t, q, "r", j.ID, "dead")
		other := deadJob(t, q, now)
		q.Client().Del(ctx, k.Job(other))
		q.Client().RPush(ctx, k.Job(other), "junk") // a job key of any type goes
		n, err := q.Ops.Purge(ctx, "r", now.Add(time.Hour))
		if err != nil || n != 2 {
			t.Fatalf("purge = %d, %v; want both", n, err)
		}
		for _, key := range keysUnder(t, q) {
			if strings.Contains(key, j.ID) || strings.Contains(key, other) {
				t.Fatalf("purge left %s", key)
			}
		}
	})
}

// cronFire is one tick of entry "e" on route r, fired at tick.
func cronFire(t *testing.T, tick time.Time) queue.CronFire {
	return queue.CronFire{Route: "r", Priority: queue.Normal, Tick: tick, Next: tick.Add(time.Minute),
		Job: queue.NewJob{ID: queue.NewID("r", tick), Name: "e", Envelope: env(t)}, Spec: "@every 1m"}
}

func TestFireCron_GarbageStateDoesNotStopTheEntry(t *testing.T) {
	cases := []struct {
		name     string
		spoil    func(ctx context.Context, q *queue.Queue) error
		errHas   string // in last_error after the fire
		runCount int64
	}{
		{name: "tick not a number", spoil: func(ctx context.Context, q *queue.Queue) error {
			return q.Client().HSet(ctx, q.Keys("r").Cron("e"), "tick", "soon").Err()
		}, errHas: "tick", runCount: 2},
		{name: "run count not a number", spoil: func(ctx context.Context, q *queue.Queue) error {
			return q.Client().HSet(ctx, q.Keys("r").Cron("e"), "run_count", "many").Err()
		}, runCount: 1},
		{name: "state key is a string", spoil: func(ctx context.Context, q *queue.Queue) error {
			k := q.Keys("r").Cron("e")
			q.Client().Del(ctx, k)
			return q.Client().Set(ctx, k, "junk", 0).Err()
		}, errHas: "string", runCount: 1},
		{name: "enqueued counter not a number", spoil: func(ctx context.Context, q *queue.Queue) error {
			return q.Client().HSet(ctx, q.Keys("r").Stats(), "enqueued", "x").Err()
		}, runCount: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				first := time.UnixMilli(time.Now().UnixMilli())
				if fired, err := q.FireCron(ctx, cronFire(t, first), first); !fired || err != nil {
					t.Fatalf("first fire = %v, %v", fired, err)
				}
				if err := c.spoil(ctx, q); err != nil {
					t.Fatal(err)
				}
				next := first.Add(time.Minute)
				f := cronFire(t, next)
				if fired, err := q.FireCron(ctx, f, next); !fired || err != nil {
					t.Fatalf("fire after the state was spoiled = %v, %v; want fired", fired, err)
				}
				wantPlace(t, q, "r", f.Job.ID, queue.Normal)
				st, err := q.CronState(ctx, "r", "e")
				if err != nil || st.RunCount != c.runCount || st.LastJob != f.Job.ID || !strings.Contains(st.LastError, c.errHas) {
					t.Fatalf("cron state = %+v, %v; want run count %d and last_error mentioning %q", st, err, c.runCount, c.errHas)
				}
				if fired, err := q.FireCron(ctx, cronFire(t, next), next); fired || err != nil {
					t.Fatalf("the same tick again = %v, %v; want not fired", fired, err)
				}
				if s, _ := q.Ops.Stats(ctx, "r"); s["enqueued"] < 1 {
					t.Fatalf("enqueued counter = %d", s["enqueued"])
				}
			})
		})
	}
}

// A ready list of the wrong type is refused before the tick is taken: the
// tick stays unfired, so it fires once the list is repaired.
func TestFireCron_BadReadyListRefusedBeforeTheTickIsTaken(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		tick := time.UnixMilli(time.Now().UnixMilli())
		list := q.Keys("r").List(queue.Normal)
		q.Client().Set(ctx, list, "junk", 0)
		if fired, err := q.FireCron(ctx, cronFire(t, tick), tick); fired || err == nil || !strings.Contains(err.Error(), "ready list") {
			t.Fatalf("fire onto a bad list = %v, %v; want refused naming the list", fired, err)
		}
		q.Client().Del(ctx, list)
		f := cronFire(t, tick)
		if fired, err := q.FireCron(ctx, f, tick); !fired || err != nil {
			t.Fatalf("fire once repaired = %v, %v; want fired", fired, err)
		}
		wantPlace(t, q, "r", f.Job.ID, queue.Normal)
	})
}

// around runs before and after the first script call whose arguments hold
// one of its markers: what another client did meanwhile.
type around struct {
	marker        string
	before, after func()
	mu            sync.Mutex
	done          bool
}

func (h *around) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *around) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *around) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		hit := !h.done && (cmd.Name() == "evalsha" || cmd.Name() == "eval") && slices.Contains(cmd.Args(), any(h.marker))
		h.done = h.done || hit
		h.mu.Unlock()
		if hit {
			h.before()
		}
		err := next(ctx, cmd)
		if hit {
			h.after()
		}
		return err
	}
}

// ReplayAll meets a job that another client replayed just before it, and that
// then ran and died again before ReplayAll's own call for it returned: that
// job must still be dead afterwards, not dropped from the dead-letter set
// with its hash in no place.
func TestReplayAll_JobThatDiesAgainMeanwhileStaysDead(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		k := q.Keys("r")
		x, y, z := deadJob(t, q, now), deadJob(t, q, now), deadJob(t, q, now)
		// Load the script first: the hook must wrap the call that runs it,
		// not an EVALSHA the server answers NOSCRIPT.
		if err := q.Ops.Replay(ctx, z); err != nil {
			t.Fatal(err)
		}
		other := plainClient(t, q)
		q.Client().AddHook(&around{
			marker: x,
			before: func() { // another client replays x
				other.ZRem(ctx, k.Dead(), x)
				other.HSet(ctx, k.Job(x), "s", "q")
				other.RPush(ctx, k.List(queue.Normal), x)
			},
			after: func() { // x runs and dies again
				other.LRem(ctx, k.List(queue.Normal), 0, x)
				other.HSet(ctx, k.Job(x), "s", "x")
				other.ZAdd(ctx, k.Dead(), redis.Z{Score: float64(now.Add(time.Hour).UnixMilli()), Member: x})
			},
		})
		if _, err := q.Ops.ReplayAll(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		wantPlace(t, q, "r", x, "dead")
		wantPlace(t, q, "r", y, queue.Normal)
	})
}

// wrongTypeKeyCase is one case of TestScripts_RouteKeyOfWrongTypeRefusedBeforeAnyWrite.
type wrongTypeKeyCase struct {
	name   string
	key    func(k queue.Keys) string
	setup  func(t *testing.T, q *queue.Queue, now time.Time) func() error
	errHas string
}

// wrongTypeKeyCases names, per script, a route key the script reads before
// its first write, the state that makes the script reach it, and what the
// refusal names.
var wrongTypeKeyCases = []wrongTypeKeyCase{
	{"reap, scheduled set", queue.Keys.Scheduled, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		leaseHeavy(t, q, 2, now, now.Add(time.Minute))
		return func() error {
			_, err := q.Jobs.Reap(context.Background(), "r", now.Add(time.Minute), verdict(now))
			return err
		}
	}, "scheduled set"},
	{"reap, groups hash", queue.Keys.Groups, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		leaseLight(t, q, 2, now, now.Add(time.Minute))
		return func() error {
			_, err := q.Jobs.Reap(context.Background(), "r", now.Add(time.Minute), verdict(now))
			return err
		}
	}, "groups hash"},
	{"promote of a job to dead-letter, dead-letter set", queue.Keys.Dead, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		good, bad := job(t, "r"), job(t, "r")
		good.RunAt, bad.RunAt = now.Add(time.Millisecond), now.Add(time.Millisecond)
		if _, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{good, bad}, now); err != nil {
			t.Fatal(err)
		}
		q.Client().HSet(context.Background(), q.Keys("r").Job(bad.ID), "p", "urgent")
		return func() error {
			_, err := q.Jobs.Promote(context.Background(), "r", now.Add(time.Second))
			return err
		}
	}, "dead-letter set"},
	{"replay, ready list", func(k queue.Keys) string { return k.List(queue.Normal) }, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		id := deadJob(t, q, now)
		return func() error { return q.Ops.Replay(context.Background(), id) }
	}, "ready list"},
	{"fail, groups hash", queue.Keys.Groups, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		d := leaseHeavy(t, q, 1, now, now.Add(time.Minute))[0]
		return func() error {
			_, err := q.Jobs.Fail(context.Background(), d, queue.Failure{Message: "boom", RetryAt: now, TTL: time.Minute}, now)
			return err
		}
	}, "groups hash"},
	{"fetch, a ready list after the first", func(k queue.Keys) string { return k.List(queue.Low) }, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		if _, err := q.Jobs.Enqueue(context.Background(), "r", queue.High, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		return func() error {
			_, err := q.Jobs.Fetch(context.Background(), "r", queue.Priorities, 10, now.Add(time.Minute), now)
			return err
		}
	}, "ready list"},
	{"fetch, payloads hash", queue.Keys.Payloads, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		q.Client().RPush(context.Background(), q.Keys("r").List(queue.Normal), "some-id")
		return func() error {
			_, err := q.Jobs.Fetch(context.Background(), "r", queue.Priorities, 10, now.Add(time.Minute), now)
			return err
		}
	}, "payloads hash"},
	{"claim, leases hash", queue.Keys.Leases, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		if _, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		return func() error {
			_, err := q.Jobs.FetchTypes(context.Background(), "r", queue.Priorities, []string{"t"}, 10, now.Add(time.Minute), now)
			return err
		}
	}, "leases hash"},
	{"push, payloads hash", queue.Keys.Payloads, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		q.Client().SAdd(context.Background(), queue.RoutesKey(q.Namespace()), "r") // known: only the script may write
		return func() error {
			_, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{job(t, "r")}, now)
			return err
		}
	}, "payloads hash"},
	{"push, ready list", func(k queue.Keys) string { return k.List(queue.Normal) }, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		q.Client().SAdd(context.Background(), queue.RoutesKey(q.Namespace()), "r") // known: only the script may write
		return func() error {
			_, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{job(t, "r")}, now)
			return err
		}
	}, "ready list"},
	{"fetch, groups hash", queue.Keys.Groups, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		if _, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		return func() error {
			_, err := q.Jobs.Fetch(context.Background(), "r", queue.Priorities, 10, now.Add(time.Minute), now)
			return err
		}
	}, "groups hash"},
	{"fetch, the first ready list", func(k queue.Keys) string { return k.List(queue.High) }, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		if _, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		return func() error {
			_, err := q.Jobs.Fetch(context.Background(), "r", queue.Priorities, 10, now.Add(time.Minute), now)
			return err
		}
	}, "ready list"},
	{"ack, leases hash", queue.Keys.Leases, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		return func() error {
			_, err := q.Jobs.Ack(context.Background(), d, []byte("ok"), time.Minute)
			return err
		}
	}, "leases hash"},
	{"enqueue, scheduled set", queue.Keys.Scheduled, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		j := job(t, "r")
		j.RunAt = now.Add(time.Hour)
		q.Client().SAdd(context.Background(), queue.RoutesKey(q.Namespace()), "r") // known: only the script may write
		return func() error {
			_, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{j}, now)
			return err
		}
	}, "scheduled set"},
	{"ack, payloads hash", queue.Keys.Payloads, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		d := leaseHeavy(t, q, 1, now, now.Add(time.Minute))[0]
		return func() error {
			_, err := q.Jobs.Ack(context.Background(), d, []byte("ok"), time.Minute)
			return err
		}
	}, "payloads hash"},
	{"delete, scheduled set", queue.Keys.Scheduled, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		light, _, _ := waiting(t, q, now)
		return func() error { return q.Jobs.Delete(context.Background(), light) }
	}, "scheduled set"},
	{"cancel, cancels set", queue.Keys.Cancels, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		return func() error {
			_, err := q.Jobs.Cancel(context.Background(), d.ID, []byte("canceled"), time.Minute)
			return err
		}
	}, "cancels set"},
	{"finish canceled, groups hash", queue.Keys.Groups, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		return func() error {
			_, err := q.Jobs.FinishCanceled(context.Background(), d, []byte("canceled"), time.Minute)
			return err
		}
	}, "groups hash"},
	{"cancel requests, leases hash", queue.Keys.Leases, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		if _, err := q.Jobs.Cancel(context.Background(), d.ID, []byte("canceled"), time.Minute); err != nil {
			t.Fatal(err)
		}
		return func() error {
			_, err := q.Jobs.CancelRequests(context.Background(), "r", []string{d.ID})
			return err
		}
	}, "leases hash"},
	{"handback, ready list", func(k queue.Keys) string { return k.List(queue.High) }, func(t *testing.T, q *queue.Queue, now time.Time) func() error {
		d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		return func() error {
			_, err := handBack(context.Background(), q, &queue.LostFetch{Route: "r", Token: d.Token, Until: now.Add(time.Minute)})
			return err
		}
	}, "ready list"},
}

// A route key of the wrong type is refused before the first write: the
// transition fails as a whole, naming the key, and nothing changes.
func TestScripts_RouteKeyOfWrongTypeRefusedBeforeAnyWrite(t *testing.T) {
	for _, c := range wrongTypeKeyCases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				run := c.setup(t, q, time.Now())
				key := c.key(q.Keys("r"))
				q.Client().Del(ctx, key)
				q.Client().Set(ctx, key, "junk", 0)
				before := redistest.Snapshot(t, plainClient(t, q), q.Namespace())
				err := run()
				if d := redistest.Diff(before, redistest.Snapshot(t, plainClient(t, q), q.Namespace())); d != "" {
					t.Fatalf("the call (err %v) wrote:\n%s", err, d)
				}
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("err = %v; want a refusal naming the %s", err, c.errHas)
				}
			})
		})
	}
}

// A pending job is found in whichever ready list holds it when its priority
// (in its hash, or its payload) does not read, and is deleted whole.
func TestDelete_PendingJobWithGarbagePriorityIsFoundAndDeleted(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		k := q.Keys("r")
		light, heavy, _ := waiting(t, q, time.Now())
		q.Client().HSet(ctx, k.Payloads(), light, "t|urgent|1|0|\x81")
		q.Client().HSet(ctx, k.Job(heavy), "p", "urgent")
		for _, id := range []string{light, heavy} {
			if err := q.Jobs.Delete(ctx, id); err != nil {
				t.Fatalf("delete of a job with a garbage priority: %v", err)
			}
			wantPlace(t, q, "r", id, "")
			wantNoKeyOf(t, q, id, false)
		}
	})
}
