package runtime_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

// PUT /api/v1/routes/{route}/limits changes the route's own limits (a
// field left out stays, null removes it) and answers those in force; GET
// reads them; each bad field is a 400 naming it; the fetch honours them.
func TestRouteLimits_SetChangeAndRemoveOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		api := serveAPI(t, runtime.NewInspector(c), runtime.APIOptions{})
		const path = "/api/v1/routes/billing/limits"
		none := map[string]any{"route": "billing", "max_running": nil, "rate": nil, "burst": nil}
		if got := api.want(http.StatusOK, "GET", path, ""); fmt.Sprint(got) != fmt.Sprint(none) {
			t.Fatalf("GET of a route without limits = %v, want %v", got, none)
		}
		got := api.want(http.StatusOK, "PUT", path, `{"max_running": 20, "rate": "500/s", "burst": 50}`)
		if got["max_running"] != float64(20) || got["rate"] != "500/s" || got["burst"] != float64(50) {
			t.Fatalf("PUT = %v", got)
		}
		l, err := runtime.QueueOf(c).Flows.RouteLimits(ctxT(t), "billing")
		if err != nil || l.MaxRunning != 20 || l.Rate != 500 || l.Burst != 50 {
			t.Fatalf("stored limits = %+v, %v", l, err)
		}
		got = api.want(http.StatusOK, "PUT", path, `{"rate": null}`)
		if got["max_running"] != float64(20) || got["rate"] != nil || got["burst"] != nil {
			t.Fatalf("PUT rate null = %v, want max_running kept and the rate gone with its burst", got)
		}
		if got := api.want(http.StatusOK, "GET", path, ""); got["max_running"] != float64(20) || got["rate"] != nil {
			t.Fatalf("GET after the change = %v", got)
		}
		for body, field := range map[string]string{
			`{"max_running": 0}`:          "max_running",
			`{"max_running": "ten"}`:      "max_running",
			`{"max_running": 1.5}`:        "max_running",
			`{"rate": "fast"}`:            "rate",
			`{"rate": "0/s"}`:             "rate",
			`{"rate": 100}`:               "rate",
			`{"burst": 5}`:                "burst",
			`{"burst": -1}`:               "burst",
			`{"max_runing": 3}`:           "max_runing",
			`{"max_running": 2000000000}`: "max_running",
		} {
			got := api.want(http.StatusBadRequest, "PUT", path, body)
			if got["field"] != field || !strings.Contains(fmt.Sprint(got["error"]), field) {
				t.Errorf("PUT %s = %v, want a 400 naming %s", body, got, field)
			}
		}
		if got := api.want(http.StatusBadRequest, "PUT", "/api/v1/routes/b~x/limits", `{"max_running": 2}`); got["field"] != "route" {
			t.Fatalf("PUT on a shard's name = %v", got)
		}
		if got := api.want(http.StatusOK, "PUT", path, `{"max_running": null}`); fmt.Sprint(got) != fmt.Sprint(none) {
			t.Fatalf("PUT max_running null = %v, want no limit left", got)
		}
	})
}

// GET /api/v1/routes/{route}/flows shows the keys running and waiting, the
// key held at its cap first.
func TestRouteFlows_ShowTheBusiestKeysOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		q := runtime.QueueOf(c)
		if err := q.Flows.SetTaskLimits(ctx, "default", "t_capped", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"A", "A", "A", "B"} {
			if _, err := capped.With(c).Enqueue(ctx, Msg{}, runtime.Key(key)); err != nil {
				t.Fatal(err)
			}
		}
		now := q.Now()
		if _, err := q.Jobs.Fetch(ctx, "default", queue.Priorities, 10, now.Add(60e9), now); err != nil {
			t.Fatal(err)
		}
		api := serveAPI(t, runtime.NewInspector(c), runtime.APIOptions{})
		got := api.want(http.StatusOK, "GET", "/api/v1/routes/default/flows", "")
		if got["running"] != float64(2) || got["waiting"] != float64(2) || got["held"] != float64(1) {
			t.Fatalf("flows = %v, want 2 running, 2 waiting, 1 held", got)
		}
		busiest, _ := got["busiest"].([]any)
		first, _ := busiest[0].(map[string]any)
		if len(busiest) != 2 || first["key"] != "A" || first["waiting"] != float64(2) || first["parked"] != true {
			t.Fatalf("busiest = %v, want A first, parked with 2 waiting", busiest)
		}
		tasks, _ := got["tasks"].(map[string]any)
		if tl, _ := tasks["t_capped"].(map[string]any); tl["max_running"] != float64(1) {
			t.Fatalf("tasks = %v", tasks)
		}
	})
}

// The command line sets, changes, removes and reads a route's limits, and
// names the flag of a bad value.
func TestCLI_LimitsSetChangeRemoveAndShow(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	if out := a.ok("limits", "email"); !strings.HasPrefix(out, "route email: max running none, rate none, burst none\n") {
		t.Fatalf("limits email = %q", out)
	}
	out := a.ok("limits", "email", "--max-running", "20", "--rate", "100/s", "--burst", "10")
	if !strings.HasPrefix(out, "route email: max running 20, rate 100/s, burst 10\n") {
		t.Fatalf("limits email --max-running 20 --rate 100/s --burst 10 = %q", out)
	}
	if out := a.ok("limits", "email", "--rate", "none"); !strings.HasPrefix(out, "route email: max running 20, rate none, burst none\n") {
		t.Fatalf("limits email --rate none = %q", out)
	}
	if out := a.ok("limits", "email", "--json"); !strings.Contains(out, `"max_running": 20`) || !strings.Contains(out, `"rate": null`) {
		t.Fatalf("limits email --json = %q", out)
	}
	for _, bad := range [][]string{{"--max-running", "0"}, {"--rate", "fast"}, {"--burst", "3"}} {
		code, out, errOut := a.run(append([]string{"limits", "email"}, bad...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, bad[0]) {
			t.Errorf("limits email %v = %d %q %q, want exit 2 naming %s", bad, code, out, errOut, bad[0])
		}
	}
}

// The metrics read from Redis at scrape time count the keys held back by a
// limit and the keyed jobs running.
func TestMetrics_ThrottledAndLimitRunningPerRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		q := runtime.QueueOf(c)
		if err := q.Flows.SetTaskLimits(ctx, "default", "t_capped", queue.Limits{MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"A", "A", "B"} {
			if _, err := capped.With(c).Enqueue(ctx, Msg{}, runtime.Key(key)); err != nil {
				t.Fatal(err)
			}
		}
		now := q.Now()
		if _, err := q.Jobs.Fetch(ctx, "default", queue.Priorities, 10, now.Add(60e9), now); err != nil {
			t.Fatal(err)
		}
		s := scrapeMetrics(t, c)
		if v := s.value("bananas_limit_running", "route=default"); v != 2 {
			t.Errorf("bananas_limit_running = %v, want the 2 keyed jobs running", v)
		}
		if v := s.value("bananas_jobs_throttled_total", "route=default"); v != 1 {
			t.Errorf("bananas_jobs_throttled_total = %v, want A held back once", v)
		}
		s.lint(t)
	})
}

// A route sharded after it was limited gives its new shards its limits.
func TestRouteLimits_NewShardsGetTheRoutesLimits(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		in := runtime.NewInspector(c)
		max := "7"
		if _, err := in.SetLimits(ctx, "wide", admin.LimitsPatch{MaxRunning: &max}); err != nil {
			t.Fatal(err)
		}
		if err := in.SetShards(ctx, "wide", 3); err != nil {
			t.Fatal(err)
		}
		q := runtime.QueueOf(c)
		for _, s := range queue.ShardNames("wide", 3) {
			if l, err := q.Flows.RouteLimits(ctx, s); err != nil || l.MaxRunning != 7 {
				t.Fatalf("shard %s limits = %+v, %v; want the route's max running 7", s, l, err)
			}
		}
	})
}
