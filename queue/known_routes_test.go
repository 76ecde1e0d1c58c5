package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// A route an operator paused or gave limits of its own, with no job ever,
// is in the routes set (AddRoute) and stays there however long it is idle:
// only once resumed and its limits removed is it pruned like any route.
func TestPruneRoutes_APausedRouteOrOneWithLimitsStaysListed(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		for _, r := range []string{"held", "limited", "plain"} {
			if err := q.AddRoute(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Ops.Pause(ctx, "held"); err != nil {
			t.Fatal(err)
		}
		if err := q.Flows.SetRouteLimits(ctx, "limited", queue.Limits{MaxRunning: 2}); err != nil {
			t.Fatal(err)
		}
		if got := routesOf(t, q); !slices.Equal(got, []string{"held", "limited", "plain"}) {
			t.Fatalf("routes set = %v; want the three routes added", got)
		}
		prune(t, q, nil, now)
		if got := prune(t, q, nil, now.Add(queue.RouteIdleTTL)); !slices.Equal(got, []string{"plain"}) {
			t.Fatalf("pruned %v; want only plain, neither paused nor limited", got)
		}
		if err := q.Ops.Resume(ctx, "held"); err != nil {
			t.Fatal(err)
		}
		if err := q.Flows.SetRouteLimits(ctx, "limited", queue.Limits{}); err != nil {
			t.Fatal(err)
		}
		prune(t, q, nil, now.Add(2*queue.RouteIdleTTL))
		if got := prune(t, q, nil, now.Add(3*queue.RouteIdleTTL)); !slices.Equal(got, []string{"held", "limited"}) {
			t.Fatalf("pruned %v once resumed and unlimited; want both", got)
		}
		if err := q.AddRoute(ctx, "bad route!"); err == nil {
			t.Fatal("AddRoute took a name that is not a route")
		}
	})
}
