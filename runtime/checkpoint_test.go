package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// ckState is what the checkpoint tests' handlers save.
type ckState struct {
	Done int    `msgpack:"done"`
	Note string `msgpack:"note"`
}

var (
	ckTask      = runtime.NewTask[int, int]("ck_task", runtime.Route("ck"))
	ckCrashTask = runtime.NewTask[int, int]("ck_crash", runtime.Route("ckcrash"))
)

// checkpointKey is where job id of route keeps its checkpoint.
func checkpointKey(c *runtime.Client, route, id string) string {
	return queue.RouteKeys(c.Namespace(), route).Checkpoint(id)
}

// A run that fails: the retry reads the last value the failed run said
// (written before the failure was recorded, however soon after the
// previous write), goes on from there, and once the job completes its
// checkpoint is gone.
func TestCheckpoint_TheRetryAfterAFailureGoesOnFromTheLastCheckpoint(t *testing.T) {
	t.Parallel()
	each := func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := ckTask.With(c)
		var mu sync.Mutex
		var seen []string
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"ck"}}))
		runtime.Handle(w, task, func(ctx context.Context, n int) (int, error) {
			last, ok := runtime.LastCheckpoint[ckState](ctx)
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%v:%d:%s", ok, last.Done, last.Note))
			mu.Unlock()
			if !ok {
				// The first value is written at once; the others come
				// within a period of it, and the last is written before
				// the failure is recorded.
				if err := runtime.Checkpoint(ctx, ckState{Done: 1, Note: "first run"}); err != nil {
					return 0, err
				}
				job, _ := runtime.CurrentJob(ctx)
				for c.Redis().Exists(ctx, checkpointKey(c, "ck", job.ID)).Val() == 0 {
					if ctx.Err() != nil {
						return 0, ctx.Err()
					}
					time.Sleep(time.Millisecond)
				}
				for i := 2; i <= n; i++ {
					if err := runtime.Checkpoint(ctx, ckState{Done: i, Note: "first run"}); err != nil {
						return 0, err
					}
				}
				return 0, errors.New("crashed half way")
			}
			return last.Done * 100, nil
		})
		startWorker(t, w)
		id, err := task.Enqueue(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		got, err := task.Await(ctx, id)
		if err != nil || got != 500 {
			t.Fatalf("Await = %d, %v; want 500: the retry went on from checkpoint 5", got, err)
		}
		mu.Lock()
		if fmt.Sprint(seen) != "[false:0: true:5:first run]" {
			t.Errorf("runs saw %v; want none, then the first run's last", seen)
		}
		mu.Unlock()
		key := checkpointKey(c, "ck", id)
		waitFor(t, 5*time.Second, "the completed job's checkpoint to be removed", func() bool {
			n, err := c.Redis().Exists(ctx, key).Result()
			return err == nil && n == 0
		})
	}
	t.Run("backends", func(t *testing.T) { eachBackend(t, each) })
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		each(t, connect(t, redistest.SharedCluster(t).URL()))
	})
}

// However often a handler checkpoints, its job's checkpoint is written at
// most once per CheckpointEvery (the run's last value included).
func TestCheckpoint_AJobWritesAtMostOncePerPeriod(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	ctx := ctxT(t)
	task := ckTask.With(c)
	var mu sync.Mutex
	var writes []time.Time
	var job string
	jobSet := make(chan struct{})
	runtime.SetCheckpointWriteHook(func(id string) {
		<-jobSet
		if id == job {
			mu.Lock()
			writes = append(writes, time.Now())
			mu.Unlock()
		}
	})
	t.Cleanup(func() { runtime.SetCheckpointWriteHook(nil) })
	type span struct{ start, end time.Time }
	spans := make(chan span, 2)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"ck"}}))
	runtime.Handle(w, task, func(ctx context.Context, n int) (int, error) {
		start := time.Now()
		for i := 0; time.Since(start) < time.Second; i++ {
			if err := runtime.Checkpoint(ctx, ckState{Done: i}); err != nil {
				return 0, err
			}
		}
		spans <- span{start, time.Now()}
		if _, ok := runtime.LastCheckpoint[ckState](ctx); !ok {
			return 0, errors.New("no checkpoint")
		}
		return 0, runtime.SkipRetry
	})
	id, err := task.Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	job = id
	close(jobSet)
	startWorker(t, w)
	s := recv(t, spans, 10*time.Second, "the handler to end")
	waitFor(t, 10*time.Second, "the job to die", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
	mu.Lock()
	defer mu.Unlock()
	if len(writes) < 2 {
		t.Fatalf("%d writes; want a write per period of the run", len(writes))
	}
	for i := 1; i < len(writes); i++ {
		// The timer that writes fires a period after the last write started.
		if gap := writes[i].Sub(writes[i-1]); gap < runtime.CheckpointEvery-20*time.Millisecond {
			t.Fatalf("writes %d and %d %s apart; want at least %s", i-1, i, gap, runtime.CheckpointEvery)
		}
	}
	if most := int(s.end.Sub(s.start)/runtime.CheckpointEvery) + 2; len(writes) > most {
		t.Fatalf("%d writes in a run of %s; want at most %d", len(writes), s.end.Sub(s.start), most)
	}
	if err := c.Redis().Get(ctx, checkpointKey(c, "ck", id)).Err(); err != nil {
		t.Fatalf("a dead job's checkpoint is kept (for a replay): %v", err)
	}
}

// A graceful shutdown hands the running job back: the next run reads the
// checkpoint the stopped one saved.
func TestCheckpoint_AJobHandedBackAtShutdownGoesOnFromItsCheckpoint(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := ckTask.With(c)
		started := make(chan struct{}, 1)
		w1 := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"ck"}, ShutdownTimeout: 100 * time.Millisecond}))
		runtime.Handle(w1, task, func(ctx context.Context, n int) (int, error) {
			if err := runtime.Checkpoint(ctx, ckState{Done: 1}); err != nil {
				return 0, err
			}
			if err := runtime.Checkpoint(ctx, ckState{Done: 2, Note: "stopped"}); err != nil {
				return 0, err
			}
			started <- struct{}{}
			<-ctx.Done()
			return 0, ctx.Err()
		})
		stop := startWorker(t, w1)
		id, err := task.Enqueue(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		recv(t, started, 10*time.Second, "the first run to start")
		stop()
		info := jobInfo(t, c, id)
		if info.Status != runtime.StatusPending || info.Attempts != 0 {
			t.Fatalf("after the shutdown: %s after %d attempts; want handed back, pending, no attempt counted", info.Status, info.Attempts)
		}
		w2 := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"ck"}}))
		runtime.Handle(w2, task, func(ctx context.Context, n int) (int, error) {
			last, ok := runtime.LastCheckpoint[ckState](ctx)
			if !ok || last.Note != "stopped" {
				return 0, fmt.Errorf("checkpoint %+v, %v", last, ok)
			}
			return last.Done, nil
		})
		startWorker(t, w2)
		if got, err := task.Await(ctx, id); err != nil || got != 2 {
			t.Fatalf("Await = %d, %v; want 2, the handed-back run's checkpoint", got, err)
		}
	})
}

// A worker process SIGKILLed mid-run: once its lease expires the job runs
// again here and reads the checkpoint the killed run saved.
func TestCheckpoint_AKilledWorkersJobGoesOnFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		killedMidCheckpoint(t, redistest.Shared(t).URL())
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		killedMidCheckpoint(t, redistest.SharedCluster(t).URL())
	})
}

func killedMidCheckpoint(t *testing.T, url string) {
	ns := redistest.Namespace(t)
	c := connect(t, url, runtime.WithNamespace(ns))
	ctx := ctxT(t)
	task := ckCrashTask.With(c)
	id, err := task.Enqueue(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	killWorkerWhenItSays(t, url, ns, "checkpointed", "BANANAS_TEST_WORKER_TASK=checkpoint")
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"ckcrash"}}))
	runtime.Handle(w, task, func(ctx context.Context, n int) (int, error) {
		last, ok := runtime.LastCheckpoint[ckState](ctx)
		if !ok {
			return 0, runtime.SkipRetry
		}
		return last.Done, nil
	})
	startWorker(t, w)
	if got, err := task.Await(ctx, id); err != nil || got != 7 {
		t.Fatalf("Await = %d, %v; want 7, the killed run's checkpoint", got, err)
	}
	if info := jobInfo(t, c, id); info.Attempts != 2 {
		t.Fatalf("%d attempts; want the killed run and this one", info.Attempts)
	}
}

// runCheckpointWorkerProcess runs ck_crash jobs: each saves its args as
// its checkpoint, waits until Redis has it, says "checkpointed" and hangs
// until it is killed.
func runCheckpointWorkerProcess(ctx context.Context, c *runtime.Client) {
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"ckcrash"}, Lease: 500 * time.Millisecond, Logger: quiet()})
	runtime.Handle(w, ckCrashTask, func(ctx context.Context, n int) (int, error) {
		if err := runtime.Checkpoint(ctx, ckState{Done: n}); err != nil {
			fmt.Println("checkpoint:", err)
			select {}
		}
		job, _ := runtime.CurrentJob(ctx)
		for {
			err := c.Redis().Get(ctx, checkpointKey(c, "ckcrash", job.ID)).Err()
			if err == nil {
				break
			}
			if !errors.Is(err, redis.Nil) {
				fmt.Println("read:", err)
				os.Exit(1)
			}
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Println("checkpointed")
		select {}
	})
	_ = w.Run(ctx)
}

// Checkpoint and LastCheckpoint outside a handler: an error, and none.
func TestCheckpoint_OutsideAHandler(t *testing.T) {
	t.Parallel()
	if err := runtime.Checkpoint(context.Background(), 1); err == nil {
		t.Fatal("Checkpoint outside a handler: no error")
	}
	if _, ok := runtime.LastCheckpoint[int](context.Background()); ok {
		t.Fatal("LastCheckpoint outside a handler: found one")
	}
}
