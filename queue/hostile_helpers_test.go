package queue_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// plainClient is a second client of q's server, without hooks.
func plainClient(t *testing.T, q *queue.Queue) *redis.Client {
	t.Helper()
	c, ok := q.Client().(*redis.Client)
	if !ok {
		t.Fatalf("queue client is a %T, want *redis.Client", q.Client())
	}
	p := redis.NewClient(&redis.Options{Addr: c.Options().Addr})
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// twice, hooked into a queue's client and armed, runs every script call that
// succeeds a second time with the same arguments (as a client does that
// retries after losing the reply), and records how the namespace changed
// between the end of the first run and the end of the second.
type twice struct {
	t     *testing.T
	plain *redis.Client
	ns    string

	mu    sync.Mutex
	armed bool
	runs  int
	diffs []string
}

func hookTwice(t *testing.T, q *queue.Queue) *twice {
	h := &twice{t: t, plain: plainClient(t, q), ns: q.Namespace()}
	q.Client().AddHook(h)
	return h
}

// during arms h for f, and fails the test unless f ran at least one script
// and every second run left the namespace as the first run did.
func (h *twice) during(f func()) {
	h.t.Helper()
	h.mu.Lock()
	h.armed, h.runs, h.diffs = true, 0, nil
	h.mu.Unlock()
	f()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = false
	if h.runs == 0 {
		h.t.Fatal("no script ran while armed")
	}
	for _, d := range h.diffs {
		h.t.Errorf("a second run with the same arguments changed the namespace:\n%s", d)
	}
}

func (h *twice) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *twice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *twice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.mu.Lock()
		armed := h.armed
		h.mu.Unlock()
		if name := cmd.Name(); err != nil || !armed || (name != "evalsha" && name != "eval") {
			return err
		}
		first := redistest.Snapshot(h.t, h.plain, h.ns)
		if err := h.plain.Do(ctx, cmd.Args()...).Err(); err != nil && err != redis.Nil {
			h.t.Errorf("second run of %v failed: %v", cmd.Args()[:1], err)
		}
		d := redistest.Diff(first, redistest.Snapshot(h.t, h.plain, h.ns))
		h.mu.Lock()
		h.runs++
		if d != "" {
			h.diffs = append(h.diffs, d)
		}
		h.mu.Unlock()
		return err
	}
}

// places lists where id is on route: a ready list (by priority), scheduled,
// leased or dead. A job is in exactly one of them, or in none once finished.
func places(t *testing.T, q *queue.Queue, route, id string) []string {
	t.Helper()
	ctx := context.Background()
	k := q.Keys(route)
	rdb := q.Client()
	var at []string
	for _, p := range queue.Priorities {
		ids, err := rdb.LRange(ctx, k.List(p), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, id) {
			at = append(at, string(p))
		}
	}
	if _, err := rdb.ZScore(ctx, k.Scheduled(), id).Result(); err == nil {
		at = append(at, "scheduled")
	}
	if ok, _ := rdb.HExists(ctx, k.Leases(), id).Result(); ok {
		at = append(at, "leased")
	}
	if _, err := rdb.ZScore(ctx, k.Dead(), id).Result(); err == nil {
		at = append(at, "dead")
	}
	return at
}

// wantPlace fails unless id is in exactly the place want ("" for none).
func wantPlace[S ~string](t *testing.T, q *queue.Queue, route, id string, want S) {
	t.Helper()
	got := places(t, q, route, id)
	if (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != string(want))) {
		t.Fatalf("job %q is in %v, want it in %q only", id, got, want)
	}
}

// jobError returns the error field of id's job hash.
func jobError(t *testing.T, q *queue.Queue, route, id string) string {
	t.Helper()
	s, err := q.Client().HGet(context.Background(), q.Keys(route).Job(id), "err").Result()
	if err != nil {
		t.Fatalf("read the error of job %s: %v", id, err)
	}
	return s
}

// leaseLight enqueues n jobs ready to run on route r (light: no hash of their
// own) and leases them in one fetch call until until.
func leaseLight(t *testing.T, q *queue.Queue, n int, now, until time.Time) []*queue.Dispatch {
	t.Helper()
	ctx := context.Background()
	jobs := make([]queue.NewJob, n)
	for i := range jobs {
		jobs[i] = job(t, "r")
	}
	if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
		t.Fatal(err)
	}
	return fetchAll(t, q, n, now, until)
}

// leaseHeavy is leaseLight for jobs with a hash of their own (delayed, then
// promoted).
func leaseHeavy(t *testing.T, q *queue.Queue, n int, now, until time.Time) []*queue.Dispatch {
	t.Helper()
	ctx := context.Background()
	jobs := make([]queue.NewJob, n)
	for i := range jobs {
		jobs[i] = job(t, "r")
		jobs[i].RunAt = now.Add(time.Millisecond)
	}
	if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
		t.Fatal(err)
	}
	if moved, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil || moved != n {
		t.Fatalf("promote = %d, %v; want %d", moved, err, n)
	}
	return fetchAll(t, q, n, now, until)
}

func fetchAll(t *testing.T, q *queue.Queue, n int, now, until time.Time) []*queue.Dispatch {
	t.Helper()
	ds, err := q.Jobs.Fetch(context.Background(), "r", queue.Priorities, n, until, now)
	if err != nil || len(ds) != n {
		t.Fatalf("fetch = %d jobs, %v; want %d", len(ds), err, n)
	}
	return ds
}

// verdict is what the tests' reaper decides for every expired job.
func verdict(at time.Time) func(queue.Expired) queue.Verdict {
	return func(queue.Expired) queue.Verdict {
		return queue.Verdict{RetryAt: at, Record: []byte("lost"), TTL: time.Minute}
	}
}

func redisZ(at time.Time, member string) redis.Z {
	return redis.Z{Score: float64(at.UnixMilli()), Member: member}
}
