package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// enqueueFetchAckTwiceCases names each script of the enqueue and fetch paths
// with the state it runs on and the call that runs it, inside h.during so
// the twice hook sends it twice.
var enqueueFetchAckTwiceCases = []twiceCase{
	{"push: fresh jobs ready to run", func(t *testing.T, q *queue.Queue, h *twice) {
		jobs := []queue.NewJob{job(t, "r"), job(t, "r"), job(t, "r")}
		h.during(func() {
			if _, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, jobs, time.Now()); err != nil {
				t.Fatal(err)
			}
		})
	}},
	{"enqueue: delayed, chosen id, unique key", func(t *testing.T, q *queue.Queue, h *twice) {
		now := time.Now()
		later, chosen, unique := job(t, "r"), job(t, "r"), job(t, "r")
		later.RunAt = now.Add(time.Hour)
		chosen.ID, chosen.ChosenID = "order-42", true
		unique.UniqueKey, unique.UniqueTTL = "k", time.Hour
		h.during(func() {
			holders, err := q.Jobs.Enqueue(context.Background(), "r", queue.Normal, []queue.NewJob{later, chosen, unique}, now)
			if err != nil || strings.Join(holders, "") != "" {
				t.Fatalf("enqueue = %q, %v; want every job written", holders, err)
			}
		})
	}},
	{"fetch: light and heavy jobs, an empty entry, an id already leased", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		leased := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		jobs := []queue.NewJob{job(t, "r"), job(t, "r")}
		jobs[1].RunAt = now.Add(time.Millisecond)
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		q.Client().RPush(ctx, q.Keys("r").List(queue.Normal), "", leased.ID)
		h.during(func() {
			ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now)
			if err != nil || len(ds) != 2 {
				t.Fatalf("fetch = %d jobs, %v; want the 2 jobs, garbage dropped", len(ds), err)
			}
		})
	}},
	{"claim: the types asked for", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		other := job(t, "r")
		other.Name = "other"
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{other, job(t, "r"), job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		h.during(func() {
			ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"t"}, 10, now.Add(time.Minute), now)
			if err != nil || len(ds) != 2 {
				t.Fatalf("fetch types = %d jobs, %v; want 2", len(ds), err)
			}
		})
	}},
	{"ack: light and heavy", func(t *testing.T, q *queue.Queue, h *twice) {
		now := time.Now()
		ds := append(leaseLight(t, q, 2, now, now.Add(time.Minute)), leaseHeavy(t, q, 1, now, now.Add(time.Minute))...)
		h.during(func() {
			for _, d := range ds {
				if ok, err := q.Jobs.Ack(context.Background(), d, []byte("ok"), time.Minute); !ok || err != nil {
					t.Fatalf("ack = %v, %v", ok, err)
				}
			}
		})
	}},
	{"handback: a lost fetch's jobs", func(t *testing.T, q *queue.Queue, h *twice) {
		now := time.Now()
		ds := append(leaseLight(t, q, 2, now, now.Add(time.Minute)), leaseHeavy(t, q, 1, now, now.Add(time.Minute))...)
		h.during(func() {
			if n, err := handBack(context.Background(), q, &queue.LostFetch{Route: "r", Token: ds[0].Token, Until: now.Add(time.Minute)}); n != 2 || err != nil {
				t.Fatalf("hand back = %d, %v; want the 2 jobs of the first fetch", n, err)
			}
		})
	}},
	{"renew", func(t *testing.T, q *queue.Queue, h *twice) {
		now := time.Now()
		ds := leaseLight(t, q, 2, now, now.Add(time.Minute))
		h.during(func() {
			if lost, err := q.Jobs.Renew(context.Background(), "r", ds, now.Add(time.Hour)); len(lost) != 0 || err != nil {
				t.Fatalf("renew = %v, %v", lost, err)
			}
		})
	}},
}

// The scripts of the enqueue and fetch paths, run twice with the same
// arguments as a client that lost the reply does: the second run leaves
// every key as the first left it.
func TestScripts_SecondRunOfEnqueueFetchAckChangesNothing(t *testing.T) {
	runTwiceCases(t, enqueueFetchAckTwiceCases)
}

// A fetch that took every ready job of its route, resent, finds the lists
// empty and still answers with the jobs its first run leased: an empty
// route ends a fetch early only when it is no retry of one that leased.
func TestFetch_ResentFetchThatEmptiedTheRouteAnswersWithItsJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		ds, twice, err := fetchSentTwice(t, q, 2, 10)
		if err != nil || len(ds) != 2 || twice.Runs() != 1 {
			t.Fatalf("fetch = %d jobs, %v, %d resent; want both jobs from a fetch sent twice", len(ds), err, twice.Runs())
		}
		if n, _ := q.Client().HLen(ctx, q.Keys("r").Leases()).Result(); n != 2 {
			t.Fatalf("%d jobs leased, want the 2 the answer names", n)
		}
	})
}

// A fetch whose command reaches Redis twice (go-redis resent it after the
// reply was lost) leases the first run's jobs once: the second run takes
// nothing more and answers with them, and acking them ends the lease group.
func TestFetch_ResentFetchAnswersWithTheJobsTheFirstLeased(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		ds, twice, err := fetchSentTwice(t, q, 5, 3)
		if err != nil || len(ds) != 3 || twice.Runs() != 1 {
			t.Fatalf("fetch = %d jobs, %v, %d resent; want 3 jobs from a fetch sent twice", len(ds), err, twice.Runs())
		}
		k := q.Keys("r")
		if n, _ := q.Client().LLen(ctx, k.List(queue.Normal)).Result(); n != 2 {
			t.Fatalf("%d jobs left ready, want 2: the second run must take none", n)
		}
		if left, _ := q.Client().HGet(ctx, k.Groups(), ds[0].Token).Result(); left != "3" {
			t.Fatalf("lease group counts %q jobs, want 3", left)
		}
		for _, d := range ds {
			if ok, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); !ok || err != nil {
				t.Fatalf("ack %s = %v, %v", d.ID, ok, err)
			}
		}
		for _, key := range []string{k.Active(), k.Groups(), k.Leases()} {
			if n, _ := q.Client().Exists(ctx, key).Result(); n != 0 {
				t.Errorf("%s left after every leased job was acked", key)
			}
		}
	})
}

// loseReply lets the matching command run and then answers as a connection
// that died before the reply came back.
type loseReply struct {
	match func(redis.Cmder) bool
	armed atomic.Bool
	last  []any // the arguments of the last command whose reply it lost
}

var errReplyLost = errors.New("read tcp: i/o timeout (reply lost)")

func (h *loseReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *loseReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && h.armed.Load() && h.match(cmd) {
			h.last = cmd.Args()
			cmd.SetErr(errReplyLost)
			return errReplyLost
		}
		return err
	}
}
func (h *loseReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if err == nil && h.armed.Load() && h.match(c) {
				c.SetErr(errReplyLost)
				err = errReplyLost
			}
		}
		return err
	}
}

// A fetch whose reply was lost leased jobs nobody runs. Handed back, they
// return to the front of their lists in their order with no attempt counted,
// and a late copy of that fetch takes nothing.
func TestHandBack_LostFetchJobsReturnFirstWithoutAnAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		until := now.Add(time.Minute)
		jobs := []queue.NewJob{job(t, "r"), job(t, "r"), job(t, "r"), job(t, "r")}
		jobs[1].RunAt = now.Add(time.Millisecond) // a job with a hash of its own
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs[1:2], now); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{jobs[0], jobs[2], jobs[3]}, now); err != nil {
			t.Fatal(err)
		}
		lose := &loseReply{match: func(c redis.Cmder) bool { return c.Name() == "evalsha" || c.Name() == "eval" }}
		q.Client().AddHook(lose)
		lose.armed.Store(true)
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 3, until, now)
		lose.armed.Store(false)
		var lost *queue.LostFetch
		if !errors.As(err, &lost) || len(ds) != 0 {
			t.Fatalf("fetch = %d jobs, %v; want a *queue.LostFetch", len(ds), err)
		}
		k := q.Keys("r")
		if n, _ := q.Client().HLen(ctx, k.Leases()).Result(); n != 3 {
			t.Fatalf("%d jobs leased by the lost fetch, want 3", n)
		}
		n, err := handBack(ctx, q, lost)
		if n != 3 || err != nil {
			t.Fatalf("hand back = %d, %v; want 3", n, err)
		}
		order, _ := q.Client().LRange(ctx, k.List(queue.Normal), 0, -1).Result()
		back := map[string]bool{jobs[0].ID: true, jobs[1].ID: true, jobs[2].ID: true}
		if len(order) != 4 || !back[order[0]] || !back[order[1]] || !back[order[2]] || order[3] != jobs[3].ID {
			t.Fatalf("ready list = %v; want the 3 handed-back jobs at the front, then %s", order, jobs[3].ID)
		}
		if a, _ := q.Client().HGet(ctx, k.Job(jobs[1].ID), "a").Result(); a != "" && a != "0" {
			t.Fatalf("attempts of a handed-back job = %q, want none counted", a)
		}
		// The lost command itself arriving late, or resent: it takes nothing.
		if got, err := q.Client().Do(ctx, lose.last...).Slice(); len(got) != 0 || err != nil {
			t.Fatalf("a late copy of the lost fetch = %v, %v; want nothing taken", got, err)
		}
		ds, err = q.Jobs.Fetch(ctx, "r", queue.Priorities, 4, until, now) // the live worker's next fetch takes all four
		if err != nil || len(ds) != 4 {
			t.Fatalf("next fetch = %d jobs, %v; want the 4", len(ds), err)
		}
		for _, d := range ds {
			if d.Attempts != 0 {
				t.Errorf("job %s comes back with %d attempts, want 0", d.ID, d.Attempts)
			}
		}
	})
}

// An empty entry and the id of a job already leased, found in a ready list,
// are dropped (neither is a job to run: the second would run a job twice)
// and each is reported; the jobs around them are fetched.
func TestFetch_GarbageEntriesAreDroppedAndReported(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		var mu sync.Mutex
		var warned []string
		q.OnWarning(func(msg string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			warned = append(warned, fmt.Sprint(msg, args))
		})
		leased := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		good := job(t, "r")
		k := q.Keys("r")
		q.Client().RPush(ctx, k.List(queue.Normal), "", leased.ID)
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{good}, now); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 || ds[0].ID != good.ID {
			t.Fatalf("fetch = %v, %v; want only %s", ds, err, good.ID)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(warned) != 2 || !strings.Contains(warned[0], "empty id") || !strings.Contains(warned[1], leased.ID+" is in") {
			t.Fatalf("warnings = %q; want one for the empty entry and one naming %s", warned, leased.ID)
		}
		if tok, _ := q.Client().HGet(ctx, k.Leases(), leased.ID).Result(); tok != leased.Token {
			t.Fatalf("the leased job's lease = %q, want its own %q untouched", tok, leased.Token)
		}
	})
}

// A stats counter that is not a number (scrambled by hand) must not fail an
// enqueue after its jobs were written: the counter is reset.
func TestEnqueue_ScrambledCounterIsResetNotAnError(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		k := q.Keys("r")
		q.Client().HSet(ctx, k.Stats(), "enqueued", "many")
		now := time.Now()
		later := job(t, "r")
		later.RunAt = now.Add(time.Hour)
		for _, jobs := range [][]queue.NewJob{{job(t, "r")}, {later}} {
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
				t.Fatalf("enqueue with a scrambled counter: %v", err)
			}
		}
		if n, _ := q.Client().HGet(ctx, k.Stats(), "enqueued").Result(); n != "2" {
			t.Fatalf("enqueued counter = %q, want reset and counting: 2", n)
		}
	})
}

// A worker that runs only some task names reads past the jobs it does not
// take: 300 jobs of another task at the head of the list do not hide one of
// its own behind them.
func TestFetchTypes_JobsNobodyHereTakesDoNotHideTheRest(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		jobs := make([]queue.NewJob, 301)
		for i := range jobs {
			jobs[i] = job(t, "r")
			jobs[i].Name = "other"
		}
		jobs[300].Name = "t"
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"t"}, 5, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 || ds[0].ID != jobs[300].ID {
			t.Fatalf("fetch types = %v, %v; want the one t job behind 300 others", ds, err)
		}
	})
}

// A job hash that cannot be read when it is fetched (the connection died
// after the fetch) is named in the fetch's *LostFetch, and handing that back
// returns it to its list, not left leased to nobody: the reaper would count
// an attempt against a job that never ran.
func TestFetch_JobHashNotReadIsHandedBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		heavy, light := heavyThenLight(t, q, now)
		lose := &loseReply{match: func(c redis.Cmder) bool { return c.Name() == "hgetall" }}
		q.Client().AddHook(lose)
		lose.armed.Store(true)
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now)
		lose.armed.Store(false)
		var lost *queue.LostFetch
		if !errors.As(err, &lost) || len(ds) != 1 || ds[0].ID != light.ID || len(lost.IDs) != 1 || lost.IDs[0] != heavy.ID {
			t.Fatalf("fetch = %v, %v; want the light job and a lost fetch naming the unread one", ds, err)
		}
		if n, err := handBack(ctx, q, lost); n != 1 || err != nil {
			t.Fatalf("hand back = %d, %v; want the unread job back", n, err)
		}
		k := q.Keys("r")
		if head, _ := q.Client().LIndex(ctx, k.List(queue.Normal), 0).Result(); head != heavy.ID {
			t.Fatalf("ready list head = %q, want the unread job %s handed back", head, heavy.ID)
		}
		if tok, _ := q.Client().HGet(ctx, k.Leases(), heavy.ID).Result(); tok != "" {
			t.Fatalf("the unread job is still leased (%q)", tok)
		}
	})
}

// When the hashes of some fetched jobs cannot be read and handing them back
// at once fails too, the lost fetch names just those jobs: the others were
// returned to run, and handing them back would run them twice.
func TestFetch_LostReadHandsBackOnlyTheUnreadJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		heavy, light := heavyThenLight(t, q, now)
		var readFailed atomic.Bool // from the job hash's read on, every call is lost
		lose := &loseReply{match: func(c redis.Cmder) bool {
			if c.Name() == "hgetall" {
				readFailed.Store(true)
			}
			return readFailed.Load()
		}}
		q.Client().AddHook(lose)
		lose.armed.Store(true)
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now)
		lose.armed.Store(false)
		var lost *queue.LostFetch
		if !errors.As(err, &lost) || len(ds) != 1 || ds[0].ID != light.ID || len(lost.IDs) != 1 || lost.IDs[0] != heavy.ID {
			t.Fatalf("fetch = %v, %v; want the light job to run and a lost fetch naming only %s", ds, err, heavy.ID)
		}
		// The first hand-back ran and lost its reply: this one finds the job
		// back already, and must take nothing else.
		if _, err := handBack(ctx, q, lost); err != nil {
			t.Fatal(err)
		}
		if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("ok"), time.Minute); !ok || err != nil {
			t.Fatalf("ack of the running job = %v, %v; want its lease untouched by the hand-back", ok, err)
		}
		order, _ := q.Client().LRange(ctx, q.Keys("r").List(queue.Normal), 0, -1).Result()
		if len(order) != 1 || order[0] != heavy.ID {
			t.Fatalf("ready list = %v, want only the unread job", order)
		}
	})
}

// The same job can be held twice by one worker: a run whose lease was lost
// and a newer run under a newer token. Renewal reports the stale dispatch,
// not the job, so the newer run is not cancelled with it.
func TestRenew_ReportsTheDispatchWhoseLeaseWasLostNotTheJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		old := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		if n, err := handBack(ctx, q, &queue.LostFetch{Route: "r", Token: old.Token, Until: now}); n != 1 || err != nil {
			t.Fatalf("hand back = %d, %v", n, err)
		}
		newer := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		lost, err := q.Jobs.Renew(ctx, "r", []*queue.Dispatch{old, newer}, now.Add(time.Hour))
		if err != nil || len(lost) != 1 || lost[0] != old {
			t.Fatalf("renew lost = %v, %v; want only the stale dispatch", lost, err)
		}
	})
}

// slowTime delays TIME by d once armed.
type slowTime struct {
	d     time.Duration
	armed atomic.Bool
}

func (h *slowTime) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *slowTime) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.armed.Load() && cmd.Name() == "time" {
			time.Sleep(h.d) // a stalled round trip: the fault under test
		}
		return next(ctx, cmd)
	}
}
func (h *slowTime) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A clock sample whose round trip was slow would put the offset off by half
// of it; it is refused and the last offset kept.
func TestSyncClock_SlowSampleIsNotKept(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		if err := q.SyncClock(ctx); err != nil {
			t.Fatal(err)
		}
		good := q.Skew()
		slow := &slowTime{d: 600 * time.Millisecond}
		q.Client().AddHook(slow)
		slow.armed.Store(true)
		err := q.SyncClock(ctx)
		if err == nil || q.Skew() != good {
			t.Fatalf("sync over 600 ms round trips = %v, skew %s; want refused and %s kept", err, q.Skew(), good)
		}
	})
}

// heavyThenLight readies two jobs on route r: one with a hash of its own (a
// delayed job, promoted) at the head of the list, then a light one.
func heavyThenLight(t *testing.T, q *queue.Queue, now time.Time) (heavy, light queue.NewJob) {
	t.Helper()
	ctx := context.Background()
	heavy, light = job(t, "r"), job(t, "r")
	heavy.RunAt = now.Add(time.Millisecond)
	if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{heavy}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{light}, now); err != nil {
		t.Fatal(err)
	}
	return heavy, light
}

// fetchSentTwice enqueues pending jobs on route r, then fetches up to asked
// of them with the fetch's script sent to Redis twice (as go-redis resends
// a command whose reply was lost).
func fetchSentTwice(t *testing.T, q *queue.Queue, pending, asked int) ([]*queue.Dispatch, *redistest.Twice, error) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	jobs := make([]queue.NewJob, pending)
	for i := range jobs {
		jobs[i] = job(t, "r")
	}
	if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	twice := &redistest.Twice{Only: func(name string) bool { return armed.Load() && (name == "evalsha" || name == "eval") }}
	q.Client().AddHook(twice)
	armed.Store(true)
	ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, asked, now.Add(time.Minute), now)
	armed.Store(false)
	return ds, twice, err
}
