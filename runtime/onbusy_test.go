package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// Keyed by the args' Text, one job of a key at a time, each with its policy
// for a busy key.
var (
	dropBusy = runtime.NewTask[Msg, Reply]("t_drop_busy").
			Limit(runtime.TaskLimits{MaxRunning: 1, OnBusy: runtime.OnBusyDrop}).KeyBy(func(m Msg) string { return m.Text })
	cancelBusy = runtime.NewTask[Msg, Reply]("t_cancel_busy").
			Limit(runtime.TaskLimits{MaxRunning: 1, OnBusy: runtime.OnBusyCancelRunning}).KeyBy(func(m Msg) string { return m.Text })
)

// on_busy=drop refuses a job while its key has max_running jobs running or
// waiting (ErrKeyBusy naming the key; the API's 409 names it too), and
// takes one of another key, or of the key once it is free.
func TestOnBusy_DropRefusesAJobWhileItsKeyIsBusy(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx, task := ctxT(t), dropBusy.With(c)
		release := make(chan struct{})
		started := make(chan string, 4)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			started <- m.Text
			<-release
			return Reply{Text: m.Text}, nil
		})
		// Waiting counts: no worker runs yet.
		first, err := task.Enqueue(ctx, Msg{Text: "u1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := task.Enqueue(ctx, Msg{Text: "u1"}); !errors.Is(err, runtime.ErrKeyBusy) || !strings.Contains(err.Error(), `"u1"`) {
			t.Fatalf("second enqueue of a waiting key = %v; want ErrKeyBusy naming the key", err)
		}
		startWorker(t, w)
		if got := recv(t, started, 10*time.Second, "the first job to start"); got != "u1" {
			t.Fatalf("started %q", got)
		}
		if _, err := task.Enqueue(ctx, Msg{Text: "u1"}); !errors.Is(err, runtime.ErrKeyBusy) {
			t.Fatalf("enqueue of a running key = %v; want ErrKeyBusy", err)
		}
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		got := a.want(http.StatusConflict, "POST", "/api/v1/jobs", `{"name":"t_drop_busy","args":{"Text":"u1"}}`)
		if msg, _ := got["error"].(string); !strings.Contains(msg, `"u1"`) || got["field"] != "key" {
			t.Fatalf("API enqueue of a busy key = %v; want a 409 naming the key", got)
		}
		if _, tasks := a.do("GET", "/api/v1/tasks", ""); !strings.Contains(fmt.Sprint(tasks), "on_busy:drop") {
			t.Fatalf("GET /api/v1/tasks = %v; want the task's on_busy", tasks)
		}
		if _, err := task.Enqueue(ctx, Msg{Text: "u2"}); err != nil {
			t.Fatalf("enqueue of another key = %v", err)
		}
		close(release)
		if _, err := task.Await(ctx, first); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the key to be free again", func() bool {
			_, err := task.Enqueue(ctx, Msg{Text: "u1"})
			return err == nil
		})
	})
}

// on_busy=cancel_running cancels the key's running job through the cancel
// path (its context ends; it is not retried; it ends canceled) and the new
// job runs next.
func cancelRunningLife(t *testing.T, c *runtime.Client) {
	ctx, task := ctxT(t), cancelBusy.With(c)
	var runs atomic.Int64
	started := make(chan string, 4)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
		runs.Add(1)
		started <- m.Text
		if m.Text == "old" {
			<-ctx.Done()
			return Reply{}, ctx.Err()
		}
		return Reply{Text: m.Text}, nil
	})
	startWorker(t, w)
	old, err := task.Enqueue(ctx, Msg{Text: "old"}, runtime.Key("k"))
	if err != nil {
		t.Fatal(err)
	}
	recv(t, started, 10*time.Second, "the old job to start")
	next, err := task.Enqueue(ctx, Msg{Text: "new"}, runtime.Key("k"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Await(ctx, old); !errors.Is(err, runtime.ErrJobCanceled) {
		t.Fatalf("Await of the running job = %v; want it canceled", err)
	}
	if got, err := task.Await(ctx, next); err != nil || got.Text != "new" {
		t.Fatalf("Await of the new job = %+v, %v", got, err)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d runs; want 2: the canceled job is not retried", n)
	}
	if s := jobStatus(t, c, old); s != runtime.StatusCanceled {
		t.Fatalf("the canceled job is %s", s)
	}
}

func TestOnBusy_CancelRunningCancelsTheKeysRunningJob(t *testing.T) {
	eachBackend(t, cancelRunningLife)
}

func TestOnBusy_CancelRunningOnACluster(t *testing.T) {
	t.Parallel()
	cancelRunningLife(t, connect(t, redistest.SharedCluster(t).URL()))
}

// A worker process SIGKILLed while it runs a cancel_running key's job: the
// next job of the key asks for the cancel, nobody answers, and the lease
// frees the key: the dead job ends canceled (not retried) and the new one
// runs.
func TestOnBusy_AKilledWorkerHoldingACancelRunningKeyFreesItByItsLease(t *testing.T) {
	t.Parallel()
	url := redistest.Shared(t).URL()
	ns := redistest.Namespace(t)
	c := connect(t, url, runtime.WithNamespace(ns))
	ctx, task := ctxT(t), cancelBusy.With(c)
	old, err := task.Enqueue(ctx, Msg{Text: "payload"}, runtime.Key("k"))
	if err != nil {
		t.Fatal(err)
	}
	killWorkerMidJobAt(t, url, ns, "BANANAS_TEST_WORKER_TASK=busy")
	next, err := task.Enqueue(ctx, Msg{Text: "new"}, runtime.Key("k"))
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
		runs.Add(1)
		return Reply{Text: m.Text}, nil
	})
	startWorker(t, w)
	if got, err := task.Await(ctx, next); err != nil || got.Text != "new" {
		t.Fatalf("Await of the new job = %+v, %v", got, err)
	}
	if _, err := task.Await(ctx, old); !errors.Is(err, runtime.ErrJobCanceled) {
		t.Fatalf("Await of the killed worker's job = %v; want it canceled", err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs here; want 1: the killed job is not run again", n)
	}
}

// TaskLimits.OnBusy needs MaxRunning, and one of the three policies.
func TestOnBusy_LimitRefusesAPolicyWithoutACap(t *testing.T) {
	t.Parallel()
	for _, l := range []runtime.TaskLimits{{OnBusy: runtime.OnBusyDrop}, {MaxRunning: 1, OnBusy: "sometimes"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Limit(%+v) accepted", l)
				}
			}()
			runtime.NewTask[Msg, Reply]("t_bad_busy").Limit(l)
		}()
	}
}

// `enqueue` of a job whose key is busy (on_busy=drop) exits 2 naming the key.
func TestCLI_EnqueueToABusyKeyExits2NamingIt(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": redistest.Shared(t).URL(), "BANANAS_NAMESPACE": redistest.Namespace(t), "LOG_LEVEL": "error"}
	register := func(w *runtime.Worker) {
		runtime.Handle(w, dropBusy, func(ctx context.Context, m Msg) (Reply, error) { return Reply{}, nil })
	}
	enqueue := func() (int, string) {
		var out, errOut strings.Builder
		code := runtime.RunCommand(ctxT(t), []string{"enqueue", "t_drop_busy", `{"Text": "u1"}`}, func(k string) string { return env[k] }, &out, &errOut, register)
		return code, errOut.String()
	}
	if code, errOut := enqueue(); code != 0 {
		t.Fatalf("first enqueue exited %d: %s", code, errOut)
	}
	if code, errOut := enqueue(); code != runtime.ExitUsage || !strings.Contains(errOut, `"u1"`) || !strings.Contains(errOut, "busy") {
		t.Fatalf("enqueue to a busy key = %d %q; want exit 2 naming the key", code, errOut)
	}
}
