package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	_ "github.com/bananas-go/bananas/history/postgres" // registers postgres:// for history.Open
	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/jackc/pgx/v5"
)

// lostReply is a store whose first write is committed but reported as
// failed: what a worker killed between the commit and the drop from Redis
// leaves behind. The batch is written again; the store keeps it once.
type lostReply struct {
	history.Store
	lost atomic.Bool
}

func (s *lostReply) Write(ctx context.Context, rows []bananastype.Job) error {
	if err := s.Store.Write(ctx, rows); err != nil {
		return err
	}
	if s.lost.CompareAndSwap(false, true) {
		return errors.New("the reply of the commit was lost")
	}
	return nil
}

// openHistory opens and migrates the history at url, closed when the test
// ends.
func openHistory(t *testing.T, ctx context.Context, url string) history.Store {
	t.Helper()
	store, err := history.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	if err := store.(history.Migrator).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return store
}

// countRows counts every row of the history by paging through it.
func countRows(t *testing.T, store history.Store, q history.Query) (int, map[string]int) {
	t.Helper()
	seen := map[string]int{}
	n := 0
	q.Limit = 500
	for {
		page, err := store.Search(context.Background(), q)
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		for _, r := range page.Rows {
			seen[fmt.Sprintf("%s/%d/%d", r.ID, r.Life, r.Attempts)]++
			n++
		}
		if page.Next == "" {
			return n, seen
		}
		q.Cursor = page.Next
	}
}

func TestHistory_PostgreSQLKeepsEveryEndOnceThroughAnOutageAndALostCommit(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	opened := openHistory(t, ctx, pg.URL())
	store := &lostReply{Store: opened}
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	ok := runtime.NewTask[histArgs, histResult]("pg_ok", runtime.Route("pghist")).With(c)
	bad := runtime.NewTask[histArgs, runtime.None]("pg_bad", runtime.Route("pghist"), runtime.MaxRetries(0)).With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"pghist"}, Concurrency: 16}))
	runtime.Handle(w, ok, func(_ context.Context, a histArgs) (histResult, error) { return histResult{Double: 2 * a.N}, nil })
	runtime.Handle(w, bad, func(context.Context, histArgs) (runtime.None, error) { return runtime.None{}, errors.New("refused") })
	startWorker(t, w)
	enqueue := func(from, to int) {
		for i := from; i < to; i++ {
			task := ok.Enqueue
			if i%5 == 0 {
				task = func(ctx context.Context, a histArgs, o ...runtime.Option) (string, error) {
					return bad.Enqueue(ctx, a, o...)
				}
			}
			if _, err := task(ctx, histArgs{N: i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// While PostgreSQL restarts, a search fails: -1.
	total := func() int {
		page, err := opened.Search(ctx, history.Query{Route: "pghist", Limit: 500})
		if err != nil {
			return -1
		}
		n := len(page.Rows)
		if page.Next != "" {
			n, _ = countRows(t, opened, history.Query{Route: "pghist"})
		}
		return n
	}
	ended := c.Namespace() + ":route:{pghist}:ended"
	waiting := func() int64 { n, _ := c.Redis().LLen(ctx, ended).Result(); return n }
	// The first write's commit is reported lost: its batch stays in Redis
	// and is written again, stored once.
	enqueue(0, 200)
	waitFor(t, 30*time.Second, "200 rows in PostgreSQL and none waiting in Redis", func() bool { return total() == 200 && waiting() == 0 })

	// PostgreSQL goes away: the ends wait in Redis, and reach it when it is back.
	pg.Stop()
	enqueue(200, 300)
	waitFor(t, 30*time.Second, "100 ends waiting in Redis", func() bool { return waiting() == 100 })
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "300 rows after the outage, none waiting", func() bool { return total() == 300 && waiting() == 0 })
	n, seen := countRows(t, opened, history.Query{Route: "pghist"})
	for key, times := range seen {
		if times != 1 {
			t.Errorf("row %s stored %d times", key, times)
		}
	}
	failed, _ := countRows(t, opened, history.Query{Route: "pghist", Status: queue.StatusFailed})
	if _, err := runtime.NewInspector(c).History(ctx, admin.HistoryQuery{Cursor: "forged"}); !errors.Is(err, admin.ErrBadQuery) {
		t.Errorf("a forged cursor: %v; want a refusal matching ErrBadQuery", err)
	}
	if n != 300 || failed != 60 || !store.lost.Load() {
		t.Fatalf("rows = %d (failed %d), lost commit seen %v; want 300 (60), true", n, failed, store.lost.Load())
	}
}

// countingStore counts the rows written through it, stored or not.
type countingStore struct {
	history.Store
	rows atomic.Int64
}

func (s *countingStore) Write(ctx context.Context, rows []bananastype.Job) error {
	if err := s.Store.Write(ctx, rows); err != nil {
		return err
	}
	s.rows.Add(int64(len(rows)))
	return nil
}

// On a Redis Cluster each route's ended list lives with the route, on the
// route's master; two workers keep the routes between them, and every end
// of every route is written to PostgreSQL once.
func TestHistory_OnAClusterEveryRoutesEndsAreWrittenOnce(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx := ctxT(t)
	opened := openHistory(t, ctx, pg.URL())
	store := &countingStore{Store: opened}
	c := connect(t, redistest.SharedCluster(t).URL(), runtime.WithHistory(store))
	routes := []string{"hc-a", "hc-b", "hc-c", "hc-d", "hc-e", "hc-f"}
	for range 2 {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: routes, Concurrency: 8}))
		for _, r := range routes {
			task := runtime.NewTask[histArgs, histResult]("hc_"+r, runtime.Route(r)).With(c)
			runtime.Handle(w, task, func(_ context.Context, a histArgs) (histResult, error) { return histResult{Double: 2 * a.N}, nil })
		}
		startWorker(t, w)
	}
	const each = 40
	for _, r := range routes {
		task := runtime.NewTask[histArgs, histResult]("hc_"+r, runtime.Route(r)).With(c)
		for i := range each {
			if _, err := task.Enqueue(ctx, histArgs{N: i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := func() int {
		page, err := opened.Search(ctx, history.Query{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Rows)
	}
	waitFor(t, 30*time.Second, "every route's ends written", func() bool { return rows() == each*len(routes) })
	for _, r := range routes {
		key := c.Namespace() + ":route:{" + r + "}:ended"
		waitFor(t, 10*time.Second, key+" emptied", func() bool {
			n, err := c.Redis().LLen(ctx, key).Result()
			return err == nil && n == 0
		})
	}
	if n, written := rows(), store.rows.Load(); n != each*len(routes) || written != int64(n) {
		t.Fatalf("rows = %d, written %d times; want %d each written once (one writer per route: its keeper)", n, written, each*len(routes))
	}
}

// HISTORY_MIGRATE=0 leaves the schema alone at start: until `history
// migrate` makes it, a search fails; after, it answers.
func TestMain_HistoryMigrateOffLeavesTheSchemaToTheCommand(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	env := map[string]string{"REDIS_URL": "mem://", "HISTORY_URL": pg.URL(), "HISTORY_MIGRATE": "0"}
	run := func(args ...string) (int, string) {
		var out strings.Builder
		code := runtime.RunCommand(ctxT(t), args, func(k string) string { return env[k] }, &out, &out)
		return code, out.String()
	}
	if code, out := run("history"); code == runtime.ExitOK || !strings.Contains(out, "app history migrate") {
		t.Fatalf("history before any migration: exit %d, %q; want a failure saying how to make the schema", code, out)
	}
	if code, out := run("history", "migrate"); code != runtime.ExitOK {
		t.Fatalf("history migrate: exit %d, %q", code, out)
	}
	if code, out := run("history", "--json"); code != runtime.ExitOK || !strings.Contains(out, `"jobs"`) {
		t.Fatalf("history after the migration: exit %d, %q", code, out)
	}
}

// A worker whose PostgreSQL is down when it starts still starts and runs
// its jobs; their ends wait in Redis, and once PostgreSQL answers the
// worker creates the schema and writes them.
func TestHistory_AWorkerStartsAndRunsWhilePostgreSQLIsDown(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	pg.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	store, err := history.Open(ctx, pg.URL())
	if err != nil {
		t.Fatalf("open while PostgreSQL is down: %v", err)
	}
	t.Cleanup(store.Close)
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	task := runtime.NewTask[histArgs, histResult]("pg_late", runtime.Route("pglate")).With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"pglate"}, HistoryMigrate: true}))
	runtime.Handle(w, task, func(_ context.Context, a histArgs) (histResult, error) { return histResult{Double: 2 * a.N}, nil })
	startWorker(t, w)
	const n = 30
	for i := range n {
		if _, err := task.Enqueue(ctx, histArgs{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	ended := c.Namespace() + ":route:{pglate}:ended"
	waiting := func() int64 { l, _ := c.Redis().LLen(ctx, ended).Result(); return l }
	waitFor(t, 30*time.Second, "every job run, its end waiting in Redis", func() bool { return waiting() == n })
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the schema made and every end written", func() bool {
		page, err := store.Search(ctx, history.Query{Route: "pglate", Limit: 500})
		return err == nil && len(page.Rows) == n && waiting() == 0
	})
}

type poisonedArgs struct{ S string }

// A job whose string arg holds a NUL byte, and one that fails with an error
// text holding NUL and invalid UTF-8, end among good jobs of their route:
// each is stored (sanitised, and saying so through the API's view of the
// row), with every good one, and the route's later ends still reach
// PostgreSQL. PostgreSQL refuses those bytes (22021, 22P05): taken whole,
// the batch would be written again and again, and nothing later of the
// route stored.
func TestHistory_APoisonedJobIsStoredSanitisedAndLaterEndsStillFlow(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	store := openHistory(t, ctx, pg.URL())
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	task := runtime.NewTask[poisonedArgs, runtime.None]("pg_poison", runtime.Route("pgpoison"), runtime.MaxRetries(0)).With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"pgpoison"}, Concurrency: 4}))
	runtime.Handle(w, task, func(_ context.Context, a poisonedArgs) (runtime.None, error) {
		if strings.HasPrefix(a.S, "fail") {
			return runtime.None{}, errors.New("bad\x00bytes\xff")
		}
		return runtime.None{}, nil
	})
	// The jobs end before the worker starts, so that the poisoned ones share
	// the first batch with good ones.
	var ids []string
	enqueue := func(s string) string {
		id, err := task.Enqueue(ctx, poisonedArgs{S: s})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		return id
	}
	for i := range 5 {
		enqueue(fmt.Sprint("good", i))
	}
	nulArg := enqueue("a\x00b")
	failed := enqueue("fail")
	for i := range 5 {
		enqueue(fmt.Sprint("good", 5+i))
	}
	startWorker(t, w)
	in := runtime.NewInspector(c)
	stored := func(n int) func() bool {
		return func() bool {
			page, err := in.History(ctx, admin.HistoryQuery{Route: "pgpoison", Limit: 500})
			return err == nil && len(page.Jobs) == n
		}
	}
	waitFor(t, 30*time.Second, "every end of the first batch stored", stored(len(ids)))
	rows := map[string]bananastype.Job{}
	page, err := in.History(ctx, admin.HistoryQuery{Route: "pgpoison", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Jobs {
		rows[r.ID] = r
	}
	if r := rows[nulArg]; string(r.Args) != `{"S":"a␀b"}` || !strings.Contains(r.Sanitized, "args: NUL") {
		t.Errorf("the job with a NUL in its arg: args %s, sanitized %q", r.Args, r.Sanitized)
	}
	if r := rows[failed]; r.Status != runtime.StatusFailed || r.Error != "bad␀bytes\uFFFD" || !strings.Contains(r.Sanitized, "error:") {
		t.Errorf("the job whose error holds NUL and \\xff: status %s, error %q, sanitized %q", r.Status, r.Error, r.Sanitized)
	}
	for _, id := range ids {
		if r, ok := rows[id]; !ok || (id != nulArg && id != failed && r.Sanitized != "") {
			t.Errorf("job %s: stored %v, sanitized %q", id, ok, r.Sanitized)
		}
	}
	// Later ends of the route still flow.
	enqueue("after")
	waitFor(t, 30*time.Second, "the later end stored", stored(len(ids)))
}

// apiGet sends GET target to h as a loopback client does, and reads the
// JSON answer.
func apiGet(t *testing.T, h http.Handler, target string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "http://127.0.0.1"+target, nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("GET %s: %d, not a JSON object: %s", target, rec.Code, rec.Body)
	}
	return rec.Code, body
}

// failureLog is a logger that keeps what it logs at error level: a request
// the server failed.
type failureLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *failureLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

// Text PostgreSQL cannot hold — NUL bytes, invalid UTF-8, a lone
// continuation byte — in any parameter of a history search, or in a job id
// looked up in the history, is the caller's: a 400 naming the parameter
// (a 404 for the id), never a 500 and a server failure in the log.
func TestHistoryAPI_TextPostgreSQLCannotHoldIsA400NamingTheParameter(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	store := openHistory(t, ctx, pg.URL())
	var log failureLog
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	h := runtime.APIHandler(runtime.NewInspector(c), runtime.APIOptions{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelError}))})
	nulID := "eyJ0IjoiMjAyNi0xMS0yNlQxMDowMDowMFoiLCJpIjoiYVx1MDAwMGIiLCJsIjowLCJhIjoxfQ"    // {"t":...,"i":"a\u0000b","l":0,"a":1}
	huge := "eyJ0IjoiMjAyNi0xMS0yNlQxMDowMDowMFoiLCJpIjoiYSIsImwiOjk5OTk5OTk5OTk5LCJhIjoxfQ" // life past int4
	for target, field := range map[string]string{
		"/api/v1/history?q=%00":           "q",
		"/api/v1/history?q=%ff":           "q",
		"/api/v1/history?q=abc%80def":     "q",
		"/api/v1/history?task=%00":        "task",
		"/api/v1/history?route=%c3":       "route",
		"/api/v1/history?status=%00":      "status",
		"/api/v1/history?args.s=%00":      "args.s",
		"/api/v1/history?args.s=%ff":      "args.s",
		"/api/v1/history?args.%00=1":      "args.\x00",
		"/api/v1/history?cursor=%00":      "cursor",
		"/api/v1/history?cursor=" + nulID: "cursor",
		"/api/v1/history?cursor=" + huge:  "cursor",
	} {
		status, body := apiGet(t, h, target)
		want := strings.ToValidUTF8(field, "\uFFFD") // as JSON writes it
		if status != http.StatusBadRequest || body["field"] != want {
			t.Errorf("GET %s = %d %v; want 400 naming %q", target, status, body, field)
		}
	}
	if status, body := apiGet(t, h, "/api/v1/jobs/a%00b"); status != http.StatusNotFound {
		t.Errorf("GET /api/v1/jobs/a%%00b = %d %v; want 404", status, body)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.lines) > 0 {
		t.Errorf("the server logged failures:\n%s", strings.Join(log.lines, ""))
	}
}

// A search PostgreSQL stops for running past the store's search timeout
// (HISTORY_URL's search_timeout) is a 400 saying it took too long and how
// to narrow it, not a 500.
func TestHistoryAPI_ASearchPastTheTimeoutIsA400SayingToNarrowIt(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	store := openHistory(t, ctx, pg.URL()+"&search_timeout=100ms")
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	h := runtime.APIHandler(runtime.NewInspector(c), runtime.APIOptions{})
	if status, body := apiGet(t, h, "/api/v1/history?q=abc"); status != http.StatusOK {
		t.Fatalf("GET /api/v1/history?q=abc = %d %v", status, body)
	}
	// Another session holds the table; the search waits for it past the
	// timeout, as a search reading too many rows runs past it.
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE bananas_history IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	status, body := apiGet(t, h, "/api/v1/history?q=abc")
	_ = tx.Rollback(ctx)
	msg, _ := body["error"].(string)
	if status != http.StatusBadRequest || !strings.Contains(msg, "took too long") || !strings.Contains(msg, "narrow it") {
		t.Fatalf("a search past the timeout = %d %v; want a 400 saying it took too long and to narrow it", status, body)
	}
}
