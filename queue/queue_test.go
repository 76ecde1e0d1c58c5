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
		_, err := q.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{good, bad}, now)
		if err == nil || !strings.Contains(err.Error(), "max retries must be >= 0") {
			t.Fatalf("enqueue with a bad job err = %v", err)
		}
		if _, err := q.Enqueue(ctx, "r", "urgent", []queue.NewJob{good}, now); err == nil || !strings.Contains(err.Error(), `invalid priority "urgent"`) {
			t.Fatalf("enqueue with a bad priority err = %v", err)
		}
		if _, err := q.Enqueue(ctx, "bad route", queue.Normal, []queue.NewJob{good}, now); err == nil || !strings.Contains(err.Error(), `invalid route "bad route"`) {
			t.Fatalf("enqueue to a bad route err = %v", err)
		}
		for _, k := range keysUnder(t, q) {
			if k != queue.RoutesKey(q.Namespace()) {
				t.Fatalf("a refused enqueue left key %s", k)
			}
		}
		// An ack with an empty token is refused before any write.
		if _, err := q.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{good}, now); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Fetch(ctx, "r", queue.Priorities, 1, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %v, %v", ds, err)
		}
		d := *ds[0]
		d.Token = ""
		if _, err := q.Ack(ctx, &d, []byte("r"), time.Minute, now); err == nil || !strings.Contains(err.Error(), "token must not be empty") {
			t.Fatalf("ack with an empty token err = %v", err)
		}
		if s, _ := q.Lookup(ctx, good.ID); s == nil || s.Status != queue.StatusProcessing {
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
		if _, err := q.Enqueue(ctx, "r", queue.Low, jobs, now); err != nil {
			t.Fatal(err)
		}
		depth := func() queue.Depth {
			d, err := q.Depths(ctx, []string{"r"})
			if err != nil {
				t.Fatal(err)
			}
			return d[0]
		}
		if d := depth(); d.Low != 2 || d.Scheduled != 1 || d.Active != 0 {
			t.Fatalf("after enqueue %+v; want 2 ready, 1 scheduled", d)
		}
		ds, err := q.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now)
		if err != nil || len(ds) != 2 || ds[0].ID != jobs[0].ID || ds[1].ID != jobs[1].ID {
			t.Fatalf("fetch = %v, %v; want the two ready jobs in order, one round of the script", ds, err)
		}
		if d := depth(); d.Low != 0 || d.Active != 2 {
			t.Fatalf("after fetch %+v; want both active and none ready", d)
		}
		if ok, err := q.Ack(ctx, ds[0], []byte("rec"), time.Minute, now); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		if d := depth(); d.Active != 1 {
			t.Fatalf("after ack %+v; want one active", d)
		}
		if n, err := q.Promote(ctx, "r", now.Add(2*time.Hour)); n != 1 || err != nil {
			t.Fatalf("promote = %d, %v", n, err)
		}
		if d := depth(); d.Scheduled != 0 || d.Low != 1 {
			t.Fatalf("after promote %+v; want the scheduled job ready", d)
		}
	})
}

// The envelope is stored in 60-byte slices: any size comes back intact, and a
// typical job's hash stays compact (listpack) on Redis.
func TestEnvelope_StoredInSlicesRoundTrips(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		for _, size := range []int{0, 59, 60, 61, 90, 100_000} {
			args := make([]byte, size)
			for i := range args {
				args[i] = byte(i * 7)
			}
			e, _ := queue.EncodeEnvelope(queue.Envelope{Args: args, Description: "d"})
			j := queue.NewJob{ID: queue.NewID("r", now), Name: "t", Envelope: e}
			if _, err := q.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{j}, now); err != nil {
				t.Fatal(err)
			}
			s, err := q.Lookup(ctx, j.ID)
			if err != nil || s.BadEnvelope != nil || string(s.Envelope.Args) != string(args) || s.Envelope.Description != "d" {
				t.Fatalf("size %d: lookup = %v, %v; envelope not intact", size, err, s.BadEnvelope)
			}
			if size == 90 {
				enc, err := q.Client().ObjectEncoding(ctx, q.Keys("r").Job(j.ID)).Result()
				if err == nil && enc != "listpack" {
					t.Fatalf("a job with 90-byte args is stored as %s, want listpack", enc)
				}
			}
		}
	})
}
