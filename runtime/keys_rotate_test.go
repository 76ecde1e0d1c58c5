package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// storedArgsKey is the key id that job id's stored args on route are sealed
// under, read from Redis as it is ("" unsealed or no such job).
func storedArgsKey(t *testing.T, c *runtime.Client, ns, id string) string {
	t.Helper()
	ctx := ctxT(t)
	route, err := runtime.QueueOf(c).RouteOfJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	k := queue.RouteKeys(ns, route)
	var env string
	if p, err := c.Redis().HGet(ctx, k.Payloads(), id).Result(); err == nil {
		if strings.HasPrefix(p, "|") { // a light unique job: its key first
			p = strings.SplitN(p, "|", 5)[4]
		}
		parts := strings.SplitN(p, "|", 5)
		env = parts[len(parts)-1]
	} else {
		f, err := c.Redis().HGetAll(ctx, k.Job(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			part, ok := f["e"+strconv.Itoa(i)]
			if !ok {
				break
			}
			env += part
		}
	}
	e, err := queue.DecodeEnvelope([]byte(env))
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	kid, _ := queue.Sealed(e.Args)
	return kid
}

// Rotation: jobs sealed under k1 — waiting, scheduled, keyed, unique, on a
// sharded route — are
// resealed under k2 by RotateKeys with k2,k1; a worker holding only k2 then
// runs every one of them (of the default route), and a second rotation
// reseals none.
func TestRotateKeys_EveryWaitingJobRunsUnderTheNewKeyAlone(t *testing.T) {
	eachServer(t, func(t *testing.T, url, ns string) {
		ctx := ctxT(t)
		k1, k2 := sealKey("k1", 1), sealKey("k2", 2)
		old := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k1))
		texts := map[string]string{}
		for text, opts := range map[string][]runtime.Option{
			"waiting":      nil,
			"scheduled":    {runtime.Delay(time.Hour)},
			"keyed":        {runtime.Key("acct-1")},
			"unique":       {runtime.Unique(time.Hour)},
			"keyed-unique": {runtime.Key("acct-2"), runtime.Unique(time.Hour)},
		} {
			id, err := testtasks.Echo.With(old).Enqueue(ctx, testtasks.Msg{Text: text}, opts...)
			if err != nil {
				t.Fatal(text, err)
			}
			texts[id] = text
			if kid := storedArgsKey(t, old, ns, id); kid != "k1" {
				t.Fatalf("%s job's args are under %q before the rotation, want k1", text, kid)
			}
		}

		if _, err := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys()).RotateKeys(ctx); err == nil || !strings.Contains(err.Error(), "BANANAS_KEYS") {
			t.Fatalf("RotateKeys without keys: %v; want an error naming BANANAS_KEYS", err)
		}
		// A sharded route's jobs wait on its shards' routes.
		if err := runtime.QueueOf(old).SetShards(ctx, "wide", 4); err != nil {
			t.Fatal(err)
		}
		var sharded []string
		for _, shop := range []string{"shop-a", "shop-b", "shop-c"} {
			id, err := testtasks.Echo.With(old).Enqueue(ctx, testtasks.Msg{Text: shop}, runtime.Route("wide"), runtime.Key(shop))
			if err != nil {
				t.Fatal(err)
			}
			sharded = append(sharded, id)
		}

		rotated := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k2, k1))
		n, err := rotated.RotateKeys(ctx)
		if err != nil || n.Resealed != len(texts)+len(sharded) || n.Already != 0 || n.LeftAlone != 0 {
			t.Fatalf("RotateKeys = %+v, %v; want %d resealed", n, err, len(texts)+len(sharded))
		}
		for _, id := range sharded {
			if kid := storedArgsKey(t, rotated, ns, id); kid != "k2" {
				t.Errorf("sharded job %s's args are under %q after the rotation, want k2", id, kid)
			}
		}
		for id, text := range texts {
			if kid := storedArgsKey(t, rotated, ns, id); kid != "k2" {
				t.Errorf("%s job's args are under %q after the rotation, want k2", text, kid)
			}
		}
		if n, err := rotated.RotateKeys(ctx); err != nil || n.Resealed != 0 || n.Already != len(texts)+len(sharded) {
			t.Fatalf("second RotateKeys = %+v, %v; want 0 resealed, all already", n, err)
		}

		only := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k2))
		in := runtime.NewInspector(only, testtasks.Register)
		for id, text := range texts {
			if text == "scheduled" {
				if err := in.RunNow(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		}
		runs, _ := sealEchoWorker(t, only, quiet())
		for id, text := range texts {
			res, err := testtasks.Echo.With(only).Await(ctx, id)
			if err != nil || res.Text != "result "+text {
				t.Fatalf("%s job: %+v, %v; want its result from a worker holding k2 alone", text, res, err)
			}
		}
		if int(runs.Load()) != len(texts) {
			t.Fatalf("%d runs, want %d", runs.Load(), len(texts))
		}
	})
}

// `app keys rotate` says how many it resealed, with the process's
// BANANAS_KEYS; without keys it exits 2 naming BANANAS_KEYS.
func TestCLIKeysRotate_SaysHowManyItResealed(t *testing.T) {
	a := newApp(t)
	k1, k2 := sealKey("k1", 1), sealKey("k2", 2)
	c := connect(t, a.env["REDIS_URL"], runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]), runtime.WithKeys(k1))
	for i := 0; i < 3; i++ {
		if _, err := testtasks.Echo.With(c).Enqueue(context.Background(), testtasks.Msg{Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errOut := a.run("keys", "rotate"); code != 2 || !strings.Contains(errOut, "BANANAS_KEYS") {
		t.Fatalf("keys rotate without keys exited %d: %s; want 2 naming BANANAS_KEYS", code, errOut)
	}
	if code, _, errOut := a.with("BANANAS_KEYS", sealKeysEnv(k2, k1)).run("keys", "spin"); code != 2 || !strings.Contains(errOut, "keys rotate") {
		t.Fatalf("keys spin exited %d: %s; want 2", code, errOut)
	}
	rot := a.with("BANANAS_KEYS", sealKeysEnv(k2, k1))
	if out := rot.ok("keys", "rotate"); !strings.HasPrefix(out, "resealed 3 jobs (0 already under the newest key, 0 left alone") {
		t.Fatalf("keys rotate:\n%s", out)
	}
	if out := rot.ok("keys", "rotate"); !strings.HasPrefix(out, "resealed 0 jobs (3 already under the newest key") {
		t.Fatalf("second keys rotate:\n%s", out)
	}
	if out := rot.ok("audit"); strings.Count(out, "rotateKeys") != 3 {
		t.Errorf("the audit log holds %d rotateKeys entries, want 3 (one refused, two ok):\n%s", strings.Count(out, "rotateKeys"), out)
	}
}

// POST /api/v1/keys/rotate, against a real redis-server, does what `app
// keys rotate` does and answers its counts: a read or operate token is a
// 403 naming the admin role (nothing resealed), a body or an unknown
// parameter is a 400 naming it, a server without keys a 400 naming
// BANANAS_KEYS; each call is one entry of the audit log.
func TestAPIKeysRotate_AdminOnlyAndAnswersItsCounts(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	url := redistest.Shared(t).URL()
	ns := redistest.Namespace(t)
	k1, k2 := sealKey("k1", 1), sealKey("k2", 2)
	old := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k1))
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		id, err := testtasks.Echo.With(old).Enqueue(ctx, testtasks.Msg{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rotated := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k2, k1))
	srv := serveAPI(t, runtime.NewInspector(rotated, testtasks.Register), runtime.APIOptions{Tokens: roleTokens(t)})
	as := func(token string) *apiClient { a := *srv; a.token = token; return &a }

	for _, tok := range []string{"tok-viewer-1", "tok-oncall-1"} {
		st, body := as(tok).do("POST", "/api/v1/keys/rotate", "")
		if m, _ := body.(map[string]any); st != http.StatusForbidden || m["role"] != "admin" || !strings.Contains(fmt.Sprint(m["error"]), "needs the admin role") {
			t.Fatalf("%s: POST /api/v1/keys/rotate = %d %v; want 403 naming the admin role", tok, st, body)
		}
	}
	for _, id := range ids {
		if kid := storedArgsKey(t, rotated, ns, id); kid != "k1" {
			t.Fatalf("job %s is under %q after refused rotations, want k1", id, kid)
		}
	}
	root := as("tok-root-1")
	if st, body := root.do("POST", "/api/v1/keys/rotate", `{"dry_run": true}`); st != http.StatusBadRequest || body.(map[string]any)["field"] != "body" {
		t.Fatalf("rotate with a body = %d %v; want 400 naming the body", st, body)
	}
	if st, body := root.do("POST", "/api/v1/keys/rotate?route=default", ""); st != http.StatusBadRequest || body.(map[string]any)["field"] != "route" {
		t.Fatalf("rotate with a route = %d %v; want 400 naming the parameter", st, body)
	}
	st, body := root.do("POST", "/api/v1/keys/rotate", "")
	if m, _ := body.(map[string]any); st != http.StatusOK || m["resealed"] != float64(3) || m["already"] != float64(0) || m["left_alone"] != float64(0) {
		t.Fatalf("rotate = %d %v; want 200 with 3 resealed", st, body)
	}
	for _, id := range ids {
		if kid := storedArgsKey(t, rotated, ns, id); kid != "k2" {
			t.Errorf("job %s is under %q after the rotation, want k2", id, kid)
		}
	}
	if st, body := root.do("POST", "/api/v1/keys/rotate", ""); st != http.StatusOK || body.(map[string]any)["already"] != float64(3) {
		t.Fatalf("second rotate = %d %v; want 3 already under the newest key", st, body)
	}

	keyless := serveAPI(t, runtime.NewInspector(connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys()), testtasks.Register), runtime.APIOptions{Tokens: roleTokens(t)})
	keyless.token = "tok-root-1"
	st, body = keyless.do("POST", "/api/v1/keys/rotate", "")
	if m, _ := body.(map[string]any); st != http.StatusBadRequest || m["field"] != "keys" || !strings.Contains(fmt.Sprint(m["error"]), "BANANAS_KEYS") {
		t.Fatalf("rotate without keys = %d %v; want 400 naming BANANAS_KEYS", st, body)
	}

	page, err := runtime.NewInspector(rotated, testtasks.Register).AuditLog(ctx, admin.AuditQuery{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	for _, e := range page.Entries {
		if e.What == "rotateKeys" {
			outcomes[e.Who+" "+e.Outcome]++
		}
	}
	want := map[string]int{"viewer denied": 1, "oncall denied": 1, "root ok": 2, "root refused": 1}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Fatalf("rotateKeys audit entries by who and outcome: %v; want %v", outcomes, want)
	}
}

// A schedule's tick job sealed under k1 (its args sealed for every tick of
// the task, not for its own id) is resealed by a rotation to k2 like any
// waiting job, and so is the schedule itself (its tick envelope and its
// listed args): a worker holding k2 alone runs the waiting tick and the
// next one, and a process holding k2 alone lists its args.
func TestRotateKeys_AScheduleTickWaitingIsResealed(t *testing.T) {
	eachServer(t, func(t *testing.T, url, ns string) {
		ctx := ctxT(t)
		k1, k2 := sealKey("k1", 1), sealKey("k2", 2)
		old := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k1))
		if err := testtasks.Echo.With(old).Schedule(ctx, "nightly", testtasks.Msg{Text: "tick args"}, runtime.Every("0 0 1 1 *")); err != nil {
			t.Fatal(err)
		}
		id, err := runtime.NewInspector(old, testtasks.Register).RunSchedule(ctx, "nightly")
		if err != nil {
			t.Fatal(err)
		}
		if kid := storedArgsKey(t, old, ns, id); kid != "k1" {
			t.Fatalf("the tick job's args are under %q, want k1", kid)
		}
		rotated := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k2, k1))
		if n, err := rotated.RotateKeys(ctx); err != nil || n.Resealed != 2 || n.Unopened != 0 {
			t.Fatalf("RotateKeys = %+v, %v; want the tick job and the schedule resealed", n, err)
		}
		if n, err := rotated.RotateKeys(ctx); err != nil || n.Resealed != 0 || n.Already != 2 {
			t.Fatalf("second RotateKeys = %+v, %v; want both already under k2", n, err)
		}
		if kid := storedArgsKey(t, rotated, ns, id); kid != "k2" {
			t.Fatalf("the tick job's args are under %q after the rotation, want k2", kid)
		}
		only := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k2))
		sealEchoWorker(t, only, quiet())
		if res, err := testtasks.Echo.With(only).Await(ctx, id); err != nil || res.Text != "result tick args" {
			t.Fatalf("the tick job on a worker holding k2 alone: %+v, %v", res, err)
		}
		in := runtime.NewInspector(only, testtasks.Register)
		if s, err := in.Schedule(ctx, "nightly"); err != nil || !strings.Contains(string(s.Args), "tick args") {
			t.Fatalf("the schedule read with k2 alone: args %s, %v", s.Args, err)
		}
		next, err := in.RunSchedule(ctx, "nightly")
		if err != nil {
			t.Fatal(err)
		}
		if res, err := testtasks.Echo.With(only).Await(ctx, next); err != nil || res.Text != "result tick args" {
			t.Fatalf("the next tick on a worker holding k2 alone: %+v, %v", res, err)
		}
	})
}
