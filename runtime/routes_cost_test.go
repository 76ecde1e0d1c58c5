package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// commandCounter counts the Redis commands a client sends, pipelined ones
// each.
// commandCounter counts the commands a client sends; with route set, only
// those whose first key is one of that route's.
type commandCounter struct {
	n     atomic.Int64
	route string
}

func (h *commandCounter) counts(cmd redis.Cmder) bool {
	if h.route == "" {
		return true
	}
	for _, a := range cmd.Args()[1:] {
		if s, ok := a.(string); ok && strings.Contains(s, ":route:{"+h.route) {
			return true
		}
	}
	return false
}

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.counts(cmd) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if h.counts(c) {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// A listing of every route and a /metrics scrape cost what the live routes
// cost: 1,000 routes that once had jobs and have been idle and unserved for
// the idle period add no Redis command once pruned.
func TestRoutes_ListingAndScrapeCostFollowLiveRoutes(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		q := runtime.QueueOf(c)
		if _, err := testtasks.Echo.With(c).Enqueue(ctx, Msg{}); err != nil {
			t.Fatal(err)
		}
		in := runtime.NewInspector(c, testtasks.Register)
		counter := &commandCounter{}
		q.Client().AddHook(counter)
		cost := func() (listing, scrape int64) {
			t.Helper()
			start := counter.n.Load()
			if page, err := in.Jobs(ctx, admin.JobQuery{State: "pending"}); err != nil || len(page.Jobs) != 1 {
				t.Fatalf("listing = %+v, %v; want the live route's job", page, err)
			}
			mid := counter.n.Load()
			scrapeMetrics(t, c)
			return mid - start, counter.n.Load() - mid
		}
		cost() // the first calls load scripts and read the server's clock
		liveListing, liveScrape := cost()

		stale := make([]any, 1000)
		for i := range stale {
			stale[i] = fmt.Sprintf("stale-%04d", i)
		}
		if err := q.Client().SAdd(ctx, queue.RoutesKey(q.Namespace()), stale...).Err(); err != nil {
			t.Fatal(err)
		}
		staleListing, staleScrape := cost()
		if staleListing < len64(stale) || staleScrape < len64(stale) {
			t.Fatalf("with 1,000 stale routes listed: %d commands to list, %d to scrape (live alone: %d, %d); want each to read every route", staleListing, staleScrape, liveListing, liveScrape)
		}

		now := time.Now()
		keep := map[string]bool{"default": true}
		for _, at := range []time.Time{now, now.Add(queue.RouteIdleTTL)} {
			if _, err := q.Ops.PruneRoutes(context.Background(), keep, at); err != nil {
				t.Fatal(err)
			}
		}
		prunedListing, prunedScrape := cost()
		// A few commands of slack: a scrape may read the clock or reload a
		// script; what must not show is one command per pruned route.
		if prunedListing > liveListing+10 || prunedScrape > liveScrape+10 {
			t.Fatalf("after pruning 1,000 idle routes: %d commands to list, %d to scrape; want about the live route's %d and %d", prunedListing, prunedScrape, liveListing, liveScrape)
		}
	})
}

func len64[T any](s []T) int64 { return int64(len(s)) }

// A worker prunes the routes set as it starts (and hourly): a route idle for
// the idle period goes, while the routes it serves itself, and the routes
// another live worker serves or fires cron entries to, stay.
func TestWorker_PrunesIdleRoutesButKeepsServedOnes(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		q := runtime.QueueOf(c)
		ns := q.Namespace()
		now := q.Now()
		routes := []any{"idle", "mine", "theirs", "their-cron"}
		if err := q.Client().SAdd(ctx, queue.RoutesKey(ns), routes...).Err(); err != nil {
			t.Fatal(err)
		}
		// Each first seen idle a day and an hour ago, never enqueued to.
		since := fmt.Sprintf("%d:0", now.Add(-queue.RouteIdleTTL-time.Hour).UnixMilli())
		for _, r := range routes {
			if err := q.Client().HSet(ctx, queue.RoutesIdleKey(ns), r, since).Err(); err != nil {
				t.Fatal(err)
			}
		}
		other := []byte(`{"id":"w2","routes":["theirs"],"cron_routes":["their-cron"],"concurrency":1}`)
		if err := q.Beat(ctx, "w2", other, now, time.Minute); err != nil {
			t.Fatal(err)
		}
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"mine"}}))
		testtasks.Register(w)
		startWorker(t, w)
		deadline := time.Now().Add(10 * time.Second)
		for {
			left, err := q.Client().SMembers(ctx, queue.RoutesKey(ns)).Result()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(left, "idle") {
				slices.Sort(left)
				if !slices.Equal(left, []string{"mine", "their-cron", "theirs"}) {
					t.Fatalf("routes after the worker's pruning = %v; want the served ones kept", left)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the idle route is still listed 10 s after the worker started: %v", left)
			}
			time.Sleep(20 * time.Millisecond) // between two reads of the set, bounded by deadline
		}
	})
}
