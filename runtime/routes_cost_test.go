package runtime_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// commandCounter counts the Redis commands a client sends, pipelined ones
// each.
type commandCounter struct{ n atomic.Int64 }

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
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
			if page, err := in.Jobs(ctx, runtime.JobQuery{State: "pending"}); err != nil || len(page.Jobs) != 1 {
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
			if _, err := q.PruneRoutes(context.Background(), keep, at); err != nil {
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
