package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/scheduler"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Route pruning keeps the routes a worker fetches from, its own included
// before its first heartbeat, and those cron entries fire to; a worker that
// runs no jobs (a scheduler) does not keep the routes in its options, as it
// does not count as their taker either.
func TestServed_AreTheRoutesAWorkerFetchesFromOrFiresCronTo(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	ctx := context.Background()
	fetcher := Config{ID: "f", Routes: []string{"images"}, Concurrency: 2}
	sched := Config{ID: "s", Routes: []string{"idle"}, Concurrency: 2, SchedulerOnly: true,
		Cron: []scheduler.CronEntry{{Name: "nightly", Route: "reports", Spec: "@daily"}}}
	for _, c := range []struct {
		cfg  Config
		want []string
	}{{fetcher, []string{"images"}}, {sched, []string{"reports"}}} {
		got, err := served(ctx, q, record(&c.cfg, q.Now()))
		if err != nil || len(got) != len(c.want) {
			t.Fatalf("worker %s: served routes = %v, %v; want %v", c.cfg.ID, got, err, c.want)
		}
		for _, r := range c.want {
			if !got[r] {
				t.Fatalf("worker %s: served routes = %v; want %v", c.cfg.ID, got, c.want)
			}
		}
	}
}

// A worker's heartbeat record is what Live reads back: the record with its
// runs in flight, a scheduler's with no routes, priorities or slots, and
// Takers counts only the workers that fetch.
func TestHeartbeat_LiveReadsTheRecordsAndTakersCountsFetchers(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	ctx := context.Background()
	fetcher := Config{ID: "a-fetcher", Mode: "default", Routes: []string{"images", "mail"}, Priorities: []queue.Priority{queue.High}, Concurrency: 3}
	sched := Config{ID: "b-scheduler", Mode: "default", SchedulerMode: "scheduler", Routes: []string{"images"}, Concurrency: 3, SchedulerOnly: true}
	for i, cfg := range []Config{fetcher, sched} {
		beat := heartbeat(q, record(&cfg, q.Now()))(i + 1)
		if err := q.Beat(ctx, cfg.ID, beat, q.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := Live(ctx, q)
	if err != nil || len(ws) != 2 {
		t.Fatalf("Live = %v, %v; want the two workers", ws, err)
	}
	f, s := ws[0], ws[1]
	if f.ID != "a-fetcher" || f.InFlight != 1 || f.Concurrency != 3 || len(f.Routes) != 2 || f.Mode != "default" {
		t.Fatalf("fetcher's record = %+v", f)
	}
	if s.ID != "b-scheduler" || s.InFlight != 2 || s.Concurrency != 0 || len(s.Routes) != 0 || len(s.Priorities) != 0 || s.Mode != "scheduler" {
		t.Fatalf("scheduler's record = %+v", s)
	}
	if got := Takers(ws); len(got) != 2 || got["images"] != 1 || got["mail"] != 1 {
		t.Fatalf("Takers = %v; want images and mail taken once each (the scheduler takes none)", got)
	}
	// A worker of no slots takes none of the routes it names.
	idle := admin.Worker{ID: "idle", Routes: []string{"images"}, Concurrency: 0}
	if got := Takers(append(ws, idle)); got["images"] != 1 {
		t.Fatalf("Takers with a worker of no slots = %v; want images taken once", got)
	}
}

// A record that does not read as a worker's is left out of Live.
func TestLive_LeavesOutARecordThatDoesNotRead(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	ctx := context.Background()
	good, _ := json.Marshal(admin.Worker{ID: "good"})
	if err := q.Beat(ctx, "good", good, q.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := q.Beat(ctx, "bad", []byte("{not json"), q.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	ws, err := Live(ctx, q)
	if err != nil || len(ws) != 1 || ws[0].ID != "good" {
		t.Fatalf("Live = %v, %v; want only the record that reads", ws, err)
	}
}

func newQueue(t *testing.T) *queue.Queue {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	return q
}
