package runtime_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/scheduler"
)

type reportArgs struct {
	Account string `json:"account"`
}

// A schedule made at run time enqueues its task's job with its args at
// each tick, which a worker runs; it is listed, paused, resumed and deleted
// through the client.
func TestTaskSchedule_RunsItsJobEachTickAndIsListedPausedAndDeleted(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := runtime.NewTask[reportArgs, runtime.None]("t_report").With(c)
		var mu sync.Mutex
		var ran []string
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(_ context.Context, a reportArgs) (runtime.None, error) {
			mu.Lock()
			ran = append(ran, a.Account)
			mu.Unlock()
			return runtime.None{}, nil
		})
		startWorker(t, w)
		if err := task.Schedule(ctx, "report:acme", reportArgs{Account: "acme"}, runtime.Every("@every 1s"),
			runtime.InZone("Europe/Berlin"), runtime.Overlap(runtime.OverlapAllow), runtime.Jitter(0), runtime.CatchUp(time.Minute)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "two ticks run", func() bool { mu.Lock(); defer mu.Unlock(); return len(ran) >= 2 })
		mu.Lock()
		for _, a := range ran {
			if a != "acme" {
				t.Fatalf("a tick's job ran with args %q; want acme", a)
			}
		}
		mu.Unlock()
		list, err := c.Schedules(ctx)
		if err != nil || len(list) != 1 {
			t.Fatalf("Schedules = %v, %v; want the one", list, err)
		}
		s := list[0]
		if s.ID != "report:acme" || s.Source != bananastype.SourceData || s.Name != "t_report" || string(s.Args) != `{"account":"acme"}` ||
			s.TZ != "Europe/Berlin" || s.Overlap != runtime.OverlapAllow || s.CatchUp != time.Minute || s.RunCount < 2 || s.LastJob == "" || s.NextRun.IsZero() {
			t.Fatalf("listed %+v", s)
		}
		if err := c.PauseSchedule(ctx, "report:acme"); err != nil {
			t.Fatal(err)
		}
		if s, err := c.Schedule(ctx, "report:acme"); err != nil || !s.Paused {
			t.Fatalf("after PauseSchedule: %+v, %v", s, err)
		}
		if err := c.ResumeSchedule(ctx, "report:acme"); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteSchedule(ctx, "report:acme"); err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{c.DeleteSchedule(ctx, "report:acme"), c.PauseSchedule(ctx, "nope")} {
			if !errors.Is(err, runtime.ErrNoSchedule) {
				t.Fatalf("an action on no schedule: %v; want ErrNoSchedule", err)
			}
		}
		if list, err := c.Schedules(ctx); err != nil || len(list) != 0 {
			t.Fatalf("Schedules after the delete = %v, %v", list, err)
		}
	})
}

// Bad schedules are refused with an error naming what is wrong.
func TestTaskSchedule_RefusesBadOptions(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := runtime.NewTask[reportArgs, runtime.None]("t_report").With(c)
		for want, opts := range map[string][]runtime.ScheduleOption{
			"runtime.Every":       {runtime.Overlap(runtime.OverlapSkip)},
			"cron spec":           {runtime.Every("sometimes")},
			"time zone":           {runtime.Every("@every 1s"), runtime.InZone("Nowhere/Else")},
			"overlap":             {runtime.Every("@every 1s"), runtime.Overlap("queue_all")},
			"do not apply":        {runtime.Every("@every 1s"), runtime.Delay(time.Second)},
			"invalid route":       {runtime.Every("@every 1s"), runtime.Route("a b")},
			"end must come":       {runtime.Every("@every 1s"), runtime.StartAt(time.Now()), runtime.EndAt(time.Now().Add(-time.Hour))},
			"invalid schedule id": nil,
		} {
			id := "s"
			if want == "invalid schedule id" {
				id, opts = "has space", []runtime.ScheduleOption{runtime.Every("@every 1s")}
			}
			if err := task.Schedule(ctx, id, reportArgs{}, opts...); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want an error saying %q", want, err, want)
			}
		}
		if list, _ := c.Schedules(ctx); len(list) != 0 {
			t.Fatalf("refused schedules were written: %v", list)
		}
	})
}

// Overlap skip: while a tick's job runs, the next ticks start nothing, and
// each skip is counted in bananas_schedule_skipped_total.
func TestTaskSchedule_SkipStartsNothingWhileTheLastRunsAndCountsIt(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := runtime.NewTask[reportArgs, runtime.None]("t_slow_report").With(c)
		release := make(chan struct{})
		var mu sync.Mutex
		running, most, runs := 0, 0, 0
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, task, func(ctx context.Context, _ reportArgs) (runtime.None, error) {
			mu.Lock()
			running++
			runs++
			most = max(most, running)
			mu.Unlock()
			select {
			case <-release:
			case <-ctx.Done():
			}
			mu.Lock()
			running--
			mu.Unlock()
			return runtime.None{}, nil
		})
		startWorker(t, w)
		if err := task.Schedule(ctx, "slow", reportArgs{}, runtime.Every("@every 1s")); err != nil { // skip: the default
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "two ticks skipped", func() bool {
			s, err := c.Schedule(ctx, "slow")
			return err == nil && s.Skipped >= 2
		})
		rec := httptest.NewRecorder()
		c.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if !strings.Contains(rec.Body.String(), `bananas_schedule_skipped_total{task="t_slow_report"}`) {
			t.Fatalf("no bananas_schedule_skipped_total for the task in:\n%s", grepLines(rec.Body.String(), "schedule"))
		}
		close(release)
		waitFor(t, 10*time.Second, "the tick after the job ended ran", func() bool { mu.Lock(); defer mu.Unlock(); return runs >= 2 })
		mu.Lock()
		defer mu.Unlock()
		if most != 1 {
			t.Fatalf("%d of the schedule's jobs ran at once under overlap skip", most)
		}
	})
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Overlap cancel_running: a tick cancels the last tick's job that still
// runs, then enqueues its own.
func TestTaskSchedule_CancelRunningCancelsTheLastJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := runtime.NewTask[reportArgs, runtime.None]("t_endless_report").With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, task, func(ctx context.Context, _ reportArgs) (runtime.None, error) {
			<-ctx.Done()
			return runtime.None{}, ctx.Err()
		})
		startWorker(t, w)
		if err := task.Schedule(ctx, "endless", reportArgs{}, runtime.Every("@every 1s"), runtime.Overlap(runtime.OverlapCancelRunning)); err != nil {
			t.Fatal(err)
		}
		var first string
		waitFor(t, 10*time.Second, "a first tick's job", func() bool {
			s, err := c.Schedule(ctx, "endless")
			first = s.LastJob
			return err == nil && first != ""
		})
		waitFor(t, 10*time.Second, "the first tick's job canceled by a later tick", func() bool {
			return jobStatus(t, c, first) == runtime.StatusCanceled
		})
		waitFor(t, 10*time.Second, "the canceling tick's own job enqueued", func() bool {
			s, err := c.Schedule(ctx, "endless")
			return err == nil && s.LastJob != first && s.RunCount >= 2
		})
	})
}

// Overlap buffer_one: with the last tick's job running, one more waits;
// while that one waits, ticks enqueue nothing.
func TestTaskSchedule_BufferOneKeepsOneWaitingBehindARunningJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := runtime.NewTask[reportArgs, runtime.None]("t_long_report").With(c)
		release := make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 1}))
		runtime.Handle(w, task, func(ctx context.Context, _ reportArgs) (runtime.None, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return runtime.None{}, nil
		})
		stop := startWorker(t, w)
		if err := task.Schedule(ctx, "long", reportArgs{}, runtime.Every("@every 1s"), runtime.Overlap(runtime.OverlapBufferOne)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "a tick skipped", func() bool {
			s, err := c.Schedule(ctx, "long")
			return err == nil && s.Skipped >= 1
		})
		if s, _ := c.Schedule(ctx, "long"); s.RunCount != 2 {
			t.Fatalf("buffer_one enqueued %d jobs behind one that runs; want 2 (the running one and one waiting)", s.RunCount)
		}
		close(release)
		stop()
	})
}

// On a Redis Cluster, schedules made through the typed API spread over the
// masters, and two workers run one job per tick of each.
func TestTaskSchedule_OnACluster(t *testing.T) {
	t.Parallel()
	cl := redistest.SharedCluster(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	ran := map[string]int{}
	var stops []func()
	var c *runtime.Client
	space := redistest.Namespace(t)
	for range 2 {
		c = connect(t, cl.URL(), runtime.WithNamespace(space))
		task := runtime.NewTask[reportArgs, runtime.None]("t_cluster_report").With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, a reportArgs) (runtime.None, error) {
			j, _ := runtime.CurrentJob(ctx)
			mu.Lock()
			ran[a.Account+" "+j.ID]++
			mu.Unlock()
			return runtime.None{}, nil
		})
		stops = append(stops, startWorker(t, w))
	}
	task := runtime.NewTask[reportArgs, runtime.None]("t_cluster_report").With(c)
	nodes := map[string]bool{}
	for _, acct := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := task.Schedule(ctx, "report:"+acct, reportArgs{Account: acct}, runtime.Every("@every 1s"), runtime.Overlap(runtime.OverlapAllow)); err != nil {
			t.Fatal(err)
		}
		node, err := c.Redis().(*redis.ClusterClient).MasterForKey(ctx, (&scheduler.Schedules{Queue: runtime.QueueOf(c)}).Key("report:"+acct))
		if err != nil {
			t.Fatal(err)
		}
		nodes[node.Options().Addr] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("six schedules on %d master(s); want them spread", len(nodes))
	}
	waitFor(t, 15*time.Second, "two ticks of every schedule run", func() bool {
		list, err := c.Schedules(ctx)
		if err != nil || len(list) != 6 {
			return false
		}
		for _, s := range list {
			if s.RunCount < 2 {
				return false
			}
		}
		return true
	})
	for _, stop := range stops {
		stop()
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range ran {
		if n != 1 {
			t.Fatalf("job %s ran %d times", k, n)
		}
	}
}

// A schedule whose task no live worker registers is shown as such: two
// workers with different task sets list their tasks in their heartbeats,
// and the listing (Go API, HTTP API) marks only the schedule of a task
// neither registers; once a worker registering it is gone, its schedule is
// marked too.
func TestTaskSchedule_ATaskNoLiveWorkerRegistersIsMarked(t *testing.T) {
	c := connect(t, redistest.Shared(t).URL())
	ctx := ctxT(t)
	tasks := map[string]*runtime.Task[reportArgs, runtime.None]{}
	for _, name := range []string{"t_reg_a", "t_reg_b", "t_reg_none"} {
		tasks[name] = runtime.NewTask[reportArgs, runtime.None](name).With(c)
	}
	noop := func(context.Context, reportArgs) (runtime.None, error) { return runtime.None{}, nil }
	wa := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(wa, tasks["t_reg_a"], noop)
	wb := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(wb, tasks["t_reg_b"], noop)
	startWorker(t, wa)
	stopB := startWorker(t, wb)
	for name, task := range tasks {
		if err := task.Schedule(ctx, "reg:"+name, reportArgs{Account: name}, runtime.Every("0 0 1 1 *")); err != nil {
			t.Fatal(err)
		}
	}
	registered := func() map[string]bool {
		list, err := c.Schedules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, s := range list {
			out[s.Name] = s.Registered
		}
		return out
	}
	waitFor(t, 10*time.Second, "both workers' heartbeats", func() bool {
		r := registered()
		return r["t_reg_a"] && r["t_reg_b"]
	})
	if registered()["t_reg_none"] {
		t.Fatal("a schedule whose task no worker registers is listed registered")
	}
	api := serveAPI(t, wa.Inspector(), runtime.APIOptions{})
	for name, want := range map[string]bool{"t_reg_a": true, "t_reg_b": true, "t_reg_none": false} {
		if got := api.want(http.StatusOK, "GET", "/api/v1/schedules/reg:"+name, ""); got["registered"] != want {
			t.Errorf("GET reg:%s answered registered %v; want %v", name, got["registered"], want)
		}
	}
	stopB()
	waitFor(t, 30*time.Second, "the stopped worker's task marked", func() bool { return !registered()["t_reg_b"] })
	if !registered()["t_reg_a"] {
		t.Fatal("the live worker's task is no longer listed registered")
	}
}
