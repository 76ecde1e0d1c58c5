package runtime_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/proctest"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

var crashy = testtasks.Echo

// runWorkerProcess is the body of the test binary when it is re-executed as a
// separate worker process: it takes crashy jobs, says so on stdout, and hangs
// until it is killed. With BANANAS_TEST_WORKER_ONCE set, the handler first
// does its job's effect through runtime.Once (onceEffect), and says so only
// once that returned.
func runWorkerProcess(url, ns string) {
	ctx := context.Background()
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(1)
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Lease: 500 * time.Millisecond, Logger: quiet()})
	if os.Getenv("BANANAS_TEST_WORKER_TASK") == "capped" {
		runtime.Handle(w, capped, func(ctx context.Context, m Msg) (Reply, error) {
			fmt.Println("started", m.Text)
			select {}
		})
		_ = w.Run(ctx)
		return
	}
	if os.Getenv("BANANAS_TEST_WORKER_TASK") == "batch" {
		runBatchWorkerProcess(ctx, c)
		return
	}
	if os.Getenv("BANANAS_TEST_WORKER_TASK") == "sleep" {
		runSleepWorkerProcess(ctx, c)
		return
	}
	if os.Getenv("BANANAS_TEST_WORKER_TASK") == "checkpoint" {
		runCheckpointWorkerProcess(ctx, c)
		return
	}
	if os.Getenv("BANANAS_TEST_WORKER_TASK") == "busy" {
		runtime.Handle(w, cancelBusy, func(ctx context.Context, m Msg) (Reply, error) {
			fmt.Println("started", m.Text)
			select {}
		})
		_ = w.Run(ctx)
		return
	}
	if os.Getenv("BANANAS_TEST_WORKER_TASK") == "workflow" {
		runWorkflowWorkerProcess(ctx, c)
		return
	}
	withOnce := os.Getenv("BANANAS_TEST_WORKER_ONCE") != ""
	runtime.Handle(w, crashy, func(ctx context.Context, m Msg) (Reply, error) {
		if withOnce {
			if ran, err := onceEffect(ctx, c); !ran || err != nil {
				fmt.Println("once:", ran, err)
				select {}
			}
		}
		fmt.Println("started", m.Text)
		select {}
	})
	_ = w.Run(ctx)
}

// A real worker process is killed with SIGKILL in the middle of a job; a
// worker in this process recovers the job once the dead one's lease expires.
func TestCrash_KilledWorkerProcessJobIsRecovered(t *testing.T) {
	t.Parallel()
	c, id := aJobOfAKilledWorker(t)
	ctx, task := ctxT(t), crashy.With(c)
	if s := jobStatus(t, c, id); s != runtime.StatusProcessing {
		t.Fatalf("right after the kill the job is %s, want processing (its lease not yet expired)", s)
	}

	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: "recovered " + m.Text}, nil })
	startWorker(t, w)
	got, err := task.Await(ctx, id)
	if err != nil || got.Text != "recovered payload" {
		t.Fatalf("Await = %+v, %v", got, err)
	}
	info := jobInfo(t, c, id)
	if info.Attempts != 2 || !strings.Contains(info.Error, "lease expired") {
		t.Fatalf("Job = %+v; want two attempts: the killed run, counted as failed, and the one that completed", info)
	}
}

// aJobOfAKilledWorker enqueues a crashy job on a client of its own
// namespace, and has a worker process take it and die mid-run with SIGKILL
// (killWorkerMidJob): the job is left leased by nobody.
func aJobOfAKilledWorker(t *testing.T) (*runtime.Client, string) {
	t.Helper()
	srv := redistest.Shared(t)
	ns := redistest.Namespace(t)
	c := connect(t, srv.URL(), runtime.WithNamespace(ns))
	id, err := crashy.With(c).Enqueue(ctxT(t), Msg{Text: "payload"})
	if err != nil {
		t.Fatal(err)
	}
	killWorkerMidJob(t, srv, ns)
	return c, id
}

// killWorkerMidJob starts a worker process on namespace ns of srv (env added
// to its environment), waits for it to start the crashy job "payload", and
// kills it with SIGKILL: the job stays leased by a worker that will never
// renew or finish it.
func killWorkerMidJob(t *testing.T, srv *redistest.Server, ns string, env ...string) {
	t.Helper()
	killWorkerMidJobAt(t, srv.URL(), ns, env...)
}

// killWorkerMidJobAt is killWorkerMidJob on the server (or cluster) of url.
func killWorkerMidJobAt(t *testing.T, url, ns string, env ...string) {
	t.Helper()
	killWorkerWhenItSays(t, url, ns, "started payload", env...)
}

// killWorkerWhenItSays starts a worker process (runWorkerProcess) with env
// and SIGKILLs it once it prints said.
func killWorkerWhenItSays(t *testing.T, url, ns, said string, env ...string) {
	t.Helper()
	worker := proctest.Start(t, append([]string{"BANANAS_TEST_WORKER_URL=" + url, "BANANAS_TEST_WORKER_NS=" + ns}, env...)...)
	worker.Await(t, said, 20*time.Second)
	worker.Kill(t)
}
