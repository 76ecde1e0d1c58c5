package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// eachBackend runs f against the embedded server and a real redis-server,
// each test in its own namespace.
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

func env(t *testing.T) []byte {
	b, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func job(t *testing.T, route string) queue.NewJob {
	return queue.NewJob{ID: queue.NewID(route, time.Now()), Name: "t", Envelope: env(t), MaxRetries: 1}
}

// keysUnder lists every key of the queue's namespace.
func keysUnder(t *testing.T, q *queue.Queue) []string {
	keys, err := q.Client().Keys(context.Background(), q.Namespace()+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestKeys_EveryKeyOfARouteSharesItsHashTag(t *testing.T) {
	t.Parallel()
	k := queue.RouteKeys("ns", "gpu")
	for _, key := range []string{k.List(queue.High), k.Job("x"), k.Result("x"), k.Unique("u"), k.Active(), k.Leases(), k.Scheduled(), k.Dead(), k.Stats()} {
		if !strings.HasPrefix(key, "ns:route:{gpu}:") {
			t.Fatalf("key %q is not under the route's hash tag", key)
		}
	}
}

func TestID_CarriesItsRoute(t *testing.T) {
	t.Parallel()
	id := queue.NewID("gpu-pool_1", time.Now())
	if r, ok := queue.RouteOf(id); !ok || r != "gpu-pool_1" {
		t.Fatalf("RouteOf(%q) = %q, %v", id, r, ok)
	}
	for _, id := range []string{"order-42", "", "01JD3W.gpu", "01JD3WZZZZZZZZZZZZZZZZZZZZ.bad route"} {
		if _, ok := queue.RouteOf(id); ok {
			t.Fatalf("RouteOf(%q) found a route in an id Bananas did not make", id)
		}
	}
}

// Every script checks its arguments before its first write: a bad call fails
// with an error naming the argument and leaves no key behind.
func TestScripts_ValidateBeforeWriting(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		good := job(t, "r")
		bad := job(t, "r")
		bad.MaxRetries = -1
		_, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{good, bad}, now)
		if err == nil || !strings.Contains(err.Error(), "max retries must be >= 0") {
			t.Fatalf("enqueue with a bad job err = %v", err)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", "urgent", []queue.NewJob{good}, now); err == nil || !strings.Contains(err.Error(), `invalid priority "urgent"`) {
			t.Fatalf("enqueue with a bad priority err = %v", err)
		}
		if _, err := q.Jobs.Enqueue(ctx, "bad route", queue.Normal, []queue.NewJob{good}, now); err == nil || !strings.Contains(err.Error(), `invalid route "bad route"`) {
			t.Fatalf("enqueue to a bad route err = %v", err)
		}
		for _, k := range keysUnder(t, q) {
			if k != queue.RoutesKey(q.Namespace()) {
				t.Fatalf("a refused enqueue left key %s", k)
			}
		}
		// An ack with an empty token is refused before any write.
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{good}, now); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %v, %v", ds, err)
		}
		d := *ds[0]
		d.Token = ""
		if _, err := q.Jobs.Ack(ctx, &d, []byte("r"), time.Minute); err == nil || !strings.Contains(err.Error(), "token must not be empty") {
			t.Fatalf("ack with an empty token err = %v", err)
		}
		if s, _ := q.Jobs.Lookup(ctx, good.ID); s == nil || s.Status != queue.StatusProcessing {
			t.Fatalf("a refused ack changed the job: %+v", s)
		}
	})
}

func TestEnqueueFetch_OneJobInExactlyOnePlace(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		jobs := []queue.NewJob{job(t, "r"), job(t, "r"), job(t, "r")}
		jobs[2].RunAt = now.Add(time.Hour)
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Low, jobs, now); err != nil {
			t.Fatal(err)
		}
		depth := func() queue.Depth {
			d, err := q.Ops.Depths(ctx, []string{"r"})
			if err != nil {
				t.Fatal(err)
			}
			return d[0]
		}
		if d := depth(); d.Low != 2 || d.Scheduled != 1 || d.Active != 0 {
			t.Fatalf("after enqueue %+v; want 2 ready, 1 scheduled", d)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now)
		if err != nil || len(ds) != 2 || ds[0].ID != jobs[0].ID || ds[1].ID != jobs[1].ID {
			t.Fatalf("fetch = %v, %v; want the two ready jobs in order, one round of the script", ds, err)
		}
		if d := depth(); d.Low != 0 || d.Active != 2 {
			t.Fatalf("after fetch %+v; want both active and none ready", d)
		}
		if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("rec"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		if d := depth(); d.Active != 1 {
			t.Fatalf("after ack %+v; want one active", d)
		}
		if n, err := q.Jobs.Promote(ctx, "r", now.Add(2*time.Hour)); n != 1 || err != nil {
			t.Fatalf("promote = %d, %v", n, err)
		}
		if d := depth(); d.Scheduled != 0 || d.Low != 1 {
			t.Fatalf("after promote %+v; want the scheduled job ready", d)
		}
	})
}

// A job's envelope comes back intact at any size whether it is light (ready at
// once: a payload in the route's payloads hash) or has a hash of its own
// (delayed: 60-byte slices), and a typical delayed job's hash stays compact
// (listpack) on Redis.
func TestEnvelope_StoredInSlicesRoundTrips(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		for _, size := range []int{0, 59, 60, 61, 90, 100_000} {
			args := make([]byte, size)
			for i := range args {
				args[i] = byte(i * 7) // '|' included: the envelope may hold the separator
			}
			e, _ := queue.EncodeEnvelope(queue.Envelope{Args: args, Description: "d"})
			ready := queue.NewJob{ID: queue.NewID("r", now), Name: "t", Envelope: e}
			later := queue.NewJob{ID: queue.NewID("r", now), Name: "t", Envelope: e, RunAt: now.Add(time.Hour)}
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{ready, later}, now); err != nil {
				t.Fatal(err)
			}
			for _, j := range []queue.NewJob{ready, later} {
				s, err := q.Jobs.Lookup(ctx, j.ID)
				if err != nil || s.BadEnvelope != nil || string(s.Envelope.Args) != string(args) || s.Envelope.Description != "d" || s.Name != "t" {
					t.Fatalf("size %d: lookup = %+v, %v; envelope not intact", size, s, err)
				}
			}
			ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now)
			if err != nil || len(ds) != 1 || ds[0].BadEnvelope != nil || string(ds[0].Envelope.Args) != string(args) || ds[0].Name != "t" || ds[0].Priority != queue.Normal {
				t.Fatalf("size %d: fetch = %+v, %v; want the ready job intact", size, ds, err)
			}
			if size == 90 {
				enc, err := q.Client().ObjectEncoding(ctx, q.Keys("r").Job(later.ID)).Result()
				if embedded := err != nil && strings.Contains(err.Error(), "unknown subcommand"); !embedded && (err != nil || enc != "listpack") {
					t.Fatalf("a delayed job with 90-byte args is stored as %q (%v), want listpack", enc, err)
				}
			}
		}
	})
}

// A light job lives in exactly one place through its life: the payloads hash
// while it waits and runs, a hash of its own from its first failure (attempts,
// error and arguments intact), and only its result record once it succeeds.
func TestLightJob_FailRetrySucceed(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		k := q.Keys("r")
		j := job(t, "r")
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.High, []queue.NewJob{j}, now); err != nil {
			t.Fatal(err)
		}
		exists := func(key string) bool {
			n, err := q.Client().Exists(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			return n == 1
		}
		light := func() bool {
			ok, err := q.Client().HExists(ctx, k.Payloads(), j.ID).Result()
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if s, err := q.Jobs.Lookup(ctx, j.ID); err != nil || s.Status != queue.StatusPending || s.Priority != queue.High || s.MaxRetries != 1 || !light() || exists(k.Job(j.ID)) {
			t.Fatalf("after enqueue: %+v, %v; want a pending light job", s, err)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %v, %v", ds, err)
		}
		if s, _ := q.Jobs.Lookup(ctx, j.ID); s.Status != queue.StatusProcessing {
			t.Fatalf("after fetch: %+v", s)
		}
		out, err := q.Jobs.Fail(ctx, ds[0], queue.Failure{Message: "boom", RetryAt: now, Record: []byte("x"), TTL: time.Minute}, now)
		if err != nil || out != queue.EndRetrying {
			t.Fatalf("fail = %v, %v", out, err)
		}
		s, _ := q.Jobs.Lookup(ctx, j.ID)
		if s.Status != queue.StatusScheduled || s.Attempts != 1 || s.Error != "boom" || s.Name != "t" || s.Priority != queue.High || string(s.Envelope.Args) != "\x90" || light() || !exists(k.Job(j.ID)) {
			t.Fatalf("after a failure: %+v; want a scheduled job with its own hash", s)
		}
		if n, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); n != 1 || err != nil {
			t.Fatalf("promote = %d, %v", n, err)
		}
		ds, err = q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 || ds[0].Attempts != 1 || ds[0].Name != "t" {
			t.Fatalf("second fetch = %+v, %v", ds, err)
		}
		if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("done"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		s, err = q.Jobs.Lookup(ctx, j.ID)
		if err != nil || s.Status != queue.StatusCompleted || string(s.Result) != "done" || exists(k.Job(j.ID)) || light() {
			t.Fatalf("after success: %+v, %v; want only the result record", s, err)
		}
		if b, err := q.Jobs.Result(ctx, j.ID); err != nil || string(b) != "done" {
			t.Fatalf("result = %q, %v", b, err)
		}
	})
}

// A caller-chosen id is refused while a job holds it: light and waiting,
// running, and finished (its record kept).
func TestChosenID_RefusedInEveryState(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		j := queue.NewJob{ID: "order-7", Name: "t", Envelope: env(t), ChosenID: true}
		again := func(state string) {
			t.Helper()
			h, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now)
			if err != nil || len(h) != 1 || h[0] != j.ID {
				t.Fatalf("%s: second enqueue of %s = %v, %v; want refused", state, j.ID, h, err)
			}
		}
		if h, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now); err != nil || h[0] != "" {
			t.Fatalf("first enqueue = %v, %v", h, err)
		}
		again("pending")
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 5, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %v, %v; want exactly one job", ds, err)
		}
		again("running")
		if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("done"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		again("finished")
		if d, _ := q.Ops.Depths(ctx, []string{"r"}); d[0].Normal != 0 || d[0].Active != 0 {
			t.Fatalf("refused enqueues left jobs behind: %+v", d[0])
		}
	})
}

// Leases are kept per fetch call (a lease group): a group's deadline covers
// its jobs, renewal extends it, settling its jobs one by one empties it, and
// when it expires only the jobs still leased in it are reaped — after which
// nothing of it is left in the active set or the groups hash.
func TestLeaseGroups_SettleRenewReap(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		k := q.Keys("r")
		jobs := []queue.NewJob{job(t, "r"), job(t, "r"), job(t, "r")}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
			t.Fatal(err)
		}
		until := now.Add(time.Minute)
		ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 3, until, now)
		if err != nil || len(ds) != 3 {
			t.Fatalf("fetch = %v, %v", ds, err)
		}
		if n, _ := q.Client().ZCard(ctx, k.Active()).Result(); n != 1 {
			t.Fatalf("one fetch call made %d lease groups, want 1", n)
		}
		if s, _ := q.Jobs.Lookup(ctx, ds[2].ID); s.Status != queue.StatusProcessing || s.LeaseDeadline.UnixMilli() != until.UnixMilli() {
			t.Fatalf("running job: %+v; want processing until %v", s, until)
		}
		later := now.Add(2 * time.Minute)
		if lost, err := q.Jobs.Renew(ctx, "r", ds, later); err != nil || len(lost) != 0 {
			t.Fatalf("renew = %v, %v", lost, err)
		}
		if s, _ := q.Jobs.Lookup(ctx, ds[0].ID); s.LeaseDeadline.UnixMilli() != later.UnixMilli() {
			t.Fatalf("after renewal the lease ends %v, want %v", s.LeaseDeadline, later)
		}
		if ok, err := q.Jobs.Ack(ctx, ds[0], []byte("rec"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		if out, err := q.Jobs.Fail(ctx, ds[1], queue.Failure{Message: "x", RetryAt: now, Record: []byte("f"), TTL: time.Minute}, now); out != queue.EndRetrying || err != nil {
			t.Fatalf("fail = %v, %v", out, err)
		}
		// Not expired yet: nothing to reap.
		if got, err := q.Jobs.Reap(ctx, "r", now.Add(time.Minute), func(queue.Expired) queue.Verdict {
			return queue.Verdict{RetryAt: now, TTL: time.Minute}
		}); err != nil || len(got) != 0 {
			t.Fatalf("reap before the deadline = %v, %v", got, err)
		}
		got, err := q.Jobs.Reap(ctx, "r", later, func(e queue.Expired) queue.Verdict {
			return queue.Verdict{RetryAt: later, Record: []byte("lost"), TTL: time.Minute}
		})
		if err != nil || len(got) != 1 || got[ds[2].ID] != queue.EndRetrying {
			t.Fatalf("reap = %v, %v; want only the third job, scheduled again", got, err)
		}
		d, _ := q.Ops.Depths(ctx, []string{"r"})
		active, _ := q.Client().ZCard(ctx, k.Active()).Result()
		groups, _ := q.Client().HLen(ctx, k.Groups()).Result()
		if d[0].Active != 0 || d[0].Scheduled != 2 || active != 0 || groups != 0 {
			t.Fatalf("after reaping: %+v, %d groups active, %d counted; want 2 scheduled and nothing leased", d[0], active, groups)
		}
	})
}

// Expired lease groups with more leased jobs than one reap pass takes are
// reaped over several passes, every job recovered: a group whose jobs all wait
// for a later pass is not taken for empty and dropped (which would leave its
// jobs leased to a group no reaper sees again).
func TestLeaseGroups_ReapOverSeveralPasses(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		until := now.Add(time.Minute)
		leaseAll := func(n int) {
			jobs := make([]queue.NewJob, n)
			for i := range jobs {
				jobs[i] = job(t, "r")
			}
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
				t.Fatal(err)
			}
			if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, n, until, now); err != nil || len(ds) != n {
				t.Fatalf("fetch = %d, %v", len(ds), err)
			}
		}
		leaseAll(1000) // a big group, more than a pass takes
		leaseAll(1)    // and a small one, whose job the first pass likely skips
		// Passes until no group is left, not until a pass reaps nothing: on a
		// loaded machine a pass's reply can be lost and its resend, harmless,
		// answers nothing although the first run reaped.
		passes := 0
		for ; passes < 30; passes++ {
			if active, _ := q.Client().ZCard(ctx, q.Keys("r").Active()).Result(); active == 0 {
				break
			}
			if _, err := q.Jobs.Reap(ctx, "r", until, func(queue.Expired) queue.Verdict {
				return queue.Verdict{RetryAt: until, Record: []byte("lost"), TTL: time.Minute}
			}); err != nil {
				t.Fatal(err)
			}
		}
		d, _ := q.Ops.Depths(ctx, []string{"r"})
		active, _ := q.Client().ZCard(ctx, q.Keys("r").Active()).Result()
		if passes < 2 || d[0].Active != 0 || d[0].Scheduled != 1001 || active != 0 {
			t.Fatalf("after %d passes: %+v, %d groups active; want all 1001 jobs recovered, nothing leased, over several passes", passes, d[0], active)
		}
	})
}
