package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// memStore is a history.Store in memory, for the runtime's side of the
// history (what reaches the store, when, and how often); the PostgreSQL
// store has its own tests against a real server (history/postgres).
type memStore struct {
	mu     sync.Mutex
	rows   map[string]bananastype.Job // by id/life/attempt
	writes int
	down   bool
}

func newMemStore() *memStore { return &memStore{rows: map[string]bananastype.Job{}} }

func rowKey(r bananastype.Job) string { return fmt.Sprintf("%s/%d/%d", r.ID, r.Life, r.Attempts) }

func (m *memStore) Write(_ context.Context, rows []bananastype.Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errors.New("store down")
	}
	m.writes++
	for _, r := range rows {
		if _, ok := m.rows[rowKey(r)]; !ok {
			m.rows[rowKey(r)] = r
		}
	}
	return nil
}

func (m *memStore) Job(_ context.Context, id string) ([]bananastype.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []bananastype.Job
	for _, r := range m.rows {
		if r.ID == id {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memStore) Search(context.Context, history.Query) (history.Page, error) {
	return history.Page{}, errors.New("not in the fake")
}
func (m *memStore) DropBefore(context.Context, time.Time) error { return nil }
func (m *memStore) Close()                                      {}

func (m *memStore) setDown(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

func (m *memStore) row(id string) (bananastype.Job, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.rows {
		if r.ID == id {
			return r, true
		}
	}
	return bananastype.Job{}, false
}

func (m *memStore) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.rows)
}

type histArgs struct{ N int }
type histResult struct{ Double int }

func TestHistory_EveryJobThatEndsForGoodReachesTheStore(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"mem://", ""} {
		t.Run(map[string]string{"mem://": "embedded", "": "redis"}[url], func(t *testing.T) {
			t.Parallel()
			store := newMemStore()
			c := connect(t, backendURL(t, url), runtime.WithHistory(store))
			ctx := ctxT(t)
			ok := runtime.NewTask[histArgs, histResult]("hist_ok", runtime.Route("hist")).With(c)
			bad := runtime.NewTask[histArgs, runtime.None]("hist_bad", runtime.Route("hist"), runtime.MaxRetries(0)).With(c)
			w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"hist"}}))
			runtime.Handle(w, ok, func(_ context.Context, a histArgs) (histResult, error) { return histResult{Double: 2 * a.N}, nil })
			runtime.Handle(w, bad, func(context.Context, histArgs) (runtime.None, error) { return runtime.None{}, errors.New("boom") })
			startWorker(t, w)
			okID, err := ok.Enqueue(ctx, histArgs{N: 21})
			if err != nil {
				t.Fatal(err)
			}
			badID, err := bad.Enqueue(ctx, histArgs{N: 1})
			if err != nil {
				t.Fatal(err)
			}
			later, err := ok.Enqueue(ctx, histArgs{N: 3}, runtime.Delay(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runtime.NewInspector(c).Cancel(ctx, later); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "three rows in the history", func() bool { return store.count() == 3 })
			r, _ := store.row(okID)
			if r.Status != queue.StatusCompleted || string(r.Args) != `{"N":21}` || string(r.ResultJSON) != `{"Double":42}` || r.Name != "hist_ok" ||
				r.Route != "hist" || r.Attempts != 1 || r.Worker == "" || r.FinishedAt.IsZero() || r.StartedAt.IsZero() || r.CreatedAt.IsZero() {
				t.Errorf("completed row = %+v", r)
			}
			if r, _ := store.row(badID); r.Status != queue.StatusFailed || r.Error != "boom" || string(r.Args) != `{"N":1}` || r.StartedAt.IsZero() {
				t.Errorf("dead row = %+v", r)
			}
			if r, _ := store.row(later); r.Status != queue.StatusCanceled || !r.StartedAt.IsZero() {
				t.Errorf("canceled row = %+v", r)
			}
			waitFor(t, 5*time.Second, "the ended list emptied", func() bool {
				n, err := c.Redis().LLen(ctx, c.Namespace()+":route:{hist}:ended").Result()
				return err == nil && n == 0
			})
		})
	}
}

// backendURL is url, or the shared redis-server's when url is "".
func backendURL(t *testing.T, url string) string {
	if url == "" {
		return sharedRedisURL(t)
	}
	return url
}

func sharedRedisURL(t *testing.T) string { return redistest.Shared(t).URL() }

func TestHistory_AStoreDownKeepsFinishedJobsInRedisUntilItReturns(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	store.setDown(true)
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	ctx := ctxT(t)
	task := runtime.NewTask[histArgs, histResult]("hist_down", runtime.Route("histdown")).With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"histdown"}}))
	runtime.Handle(w, task, func(_ context.Context, a histArgs) (histResult, error) { return histResult{Double: 2 * a.N}, nil })
	startWorker(t, w)
	const n = 50
	for i := range n {
		if _, err := task.Enqueue(ctx, histArgs{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	ended := c.Namespace() + ":route:{histdown}:ended"
	waitFor(t, 10*time.Second, "every finished job waiting in Redis", func() bool {
		l, err := c.Redis().LLen(ctx, ended).Result()
		return err == nil && l == n
	})
	if store.count() != 0 {
		t.Fatalf("rows = %d while the store is down", store.count())
	}
	// The backlog shows: the route's view, its JSON, the dashboard.
	srv := httptest.NewServer(runtime.APIHandler(w.Inspector(), runtime.APIOptions{}))
	defer srv.Close()
	for _, page := range []struct{ path, want string }{
		{"/api/v1/queues", `"history_backlog":50`},
		{"/", "50 not yet in history"},
	} {
		resp, err := http.Get(srv.URL + page.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), page.want) {
			t.Errorf("GET %s: %d, no %q in %.300s", page.path, resp.StatusCode, page.want, body)
		}
	}
	store.setDown(false)
	waitFor(t, 40*time.Second, "every finished job written once the store is back", func() bool { return store.count() == n })
	waitFor(t, 5*time.Second, "the ended list emptied", func() bool {
		l, err := c.Redis().LLen(ctx, ended).Result()
		return err == nil && l == 0
	})
}

func TestHistory_JobFallsBackToTheHistoryOnceRedisLetsItGo(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	ctx := ctxT(t)
	task := runtime.NewTask[histArgs, histResult]("hist_gone", runtime.Route("histgone")).With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"histgone"}}))
	runtime.Handle(w, task, func(_ context.Context, a histArgs) (histResult, error) { return histResult{Double: 2 * a.N}, nil })
	startWorker(t, w)
	id, err := task.Enqueue(ctx, histArgs{N: 4}, runtime.ResultTTL(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the job's row", func() bool { _, ok := store.row(id); return ok })
	waitFor(t, 10*time.Second, "the job read from the history", func() bool {
		info, err := c.Job(ctx, id)
		return err == nil && info.FromHistory
	})
	info, _ := c.Job(ctx, id)
	if info.Status != runtime.StatusCompleted || string(info.Args) != `{"N":4}` || string(info.ResultJSON) != `{"Double":8}` || info.Name != "hist_gone" {
		t.Fatalf("job from the history = %+v", info)
	}
	if _, err := c.Job(ctx, "histgone~nosuchjob"); !errors.Is(err, runtime.ErrJobNotFound) {
		t.Fatalf("unknown job: %v; want ErrJobNotFound", err)
	}
}

func TestMain_HistoryURLWithoutTheStoreImportedIsAUsageErrorNamingTheImport(t *testing.T) {
	t.Parallel()
	// The core module has no PostgreSQL store (history/postgres is a module
	// of its own), so this test binary is a program that does not import it.
	env := map[string]string{"REDIS_URL": "mem://", "HISTORY_URL": "postgres://app@127.0.0.1:5432/app"}
	var out, errOut strings.Builder
	code := runtime.RunCommand(ctxT(t), []string{"queues"}, func(k string) string { return env[k] }, &out, &errOut)
	if code != runtime.ExitUsage || !strings.Contains(errOut.String(), "github.com/bananas-go/bananas/history/postgres") {
		t.Fatalf("exit %d, stderr %q; want %d naming the import", code, errOut.String(), runtime.ExitUsage)
	}
}
