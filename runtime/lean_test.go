package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A job enqueued with ResultTTL(0) keeps nothing once it completed: Redis
// holds no key of it, and Job and a later Await answer ErrJobNotFound. An
// Await already waiting hears its end, OnJobEnd is told of it, the metrics
// count it.
func TestResultTTLZero_ACompletedJobLeavesNothingButItsEndIsTold(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		note := testtasks.Note.With(c)
		var ends endLog
		release := make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: ends.add}))
		runtime.Handle(w, note, func(ctx context.Context, m Msg) (runtime.None, error) {
			<-release
			return runtime.None{}, nil
		})
		startWorker(t, w)

		id, err := note.Enqueue(ctx, Msg{Text: "fire and forget"}, runtime.ResultTTL(0))
		if err != nil {
			t.Fatal(err)
		}
		awaited := make(chan error, 1)
		go func() {
			_, err := note.Await(ctx, id)
			awaited <- err
		}()
		channel := queue.ResultChannel(c.Namespace(), id)
		waitFor(t, 5*time.Second, "the Await to subscribe", func() bool {
			n, err := c.Redis().PubSubNumSub(ctx, channel).Result()
			return err == nil && n[channel] > 0
		})
		close(release)
		if err := recv(t, awaited, 10*time.Second, "the waiting Await"); err != nil {
			t.Fatalf("an Await waiting when the job completed: %v; want its end", err)
		}
		waitFor(t, 5*time.Second, "OnJobEnd", func() bool { return len(ends.of(id)) == 1 })
		if e := ends.of(id)[0]; e.Ending != queue.EndCompleted {
			t.Fatalf("OnJobEnd told %v; want completed", e.Ending)
		}

		keys, err := c.Redis().Keys(ctx, c.Namespace()+":*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if strings.Contains(k, id) {
				t.Errorf("key %s of the completed job left in Redis", k)
			}
		}
		if n, err := c.Redis().HLen(ctx, runtime.QueueOf(c).Keys("default").Payloads()).Result(); err != nil || n != 0 {
			t.Fatalf("payloads = %d, %v; want none", n, err)
		}
		if _, err := c.Job(ctx, id); !errors.Is(err, runtime.ErrJobNotFound) {
			t.Fatalf("Job of a completed job that keeps nothing: %v; want ErrJobNotFound", err)
		}
		if _, err := note.Await(ctx, id); !errors.Is(err, runtime.ErrJobNotFound) {
			t.Fatalf("an Await begun after the job completed: %v; want ErrJobNotFound", err)
		}
		if m := scrapeMetrics(t, c); m.value("bananas_jobs_processed_total", "route=default", "priority=normal", "task=t_note") != 1 {
			t.Fatalf("metrics do not count the end:\n%s", m.body)
		}
	})
}

// ResultTTL(0) keeps nothing of a success only: a failing job is retried
// and dies into the dead-letter queue as any other, its record kept.
func TestResultTTLZero_AFailureIsRetriedAndDeadLetteredAsUsual(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		note := testtasks.Note.With(c)
		var ends endLog
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: ends.add}))
		runtime.Handle(w, note, func(ctx context.Context, m Msg) (runtime.None, error) {
			return runtime.None{}, errors.New("smtp down")
		})
		startWorker(t, w)

		id, err := note.Enqueue(ctx, Msg{}, runtime.ResultTTL(0), runtime.MaxRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		var jerr *runtime.JobError
		if _, err := note.Await(ctx, id); !errors.As(err, &jerr) || jerr.Attempts != 2 {
			t.Fatalf("Await = %v; want the job's failure after 2 attempts", err)
		}
		if s := jobStatus(t, c, id); s != runtime.StatusFailed {
			t.Fatalf("status %s; want failed", s)
		}
		if _, err := c.Redis().ZScore(ctx, runtime.QueueOf(c).Keys("default").Dead(), id).Result(); err != nil {
			t.Fatalf("the job is not in the dead-letter queue: %v", err)
		}
		waitFor(t, 5*time.Second, "OnJobEnd of the retry and the death", func() bool {
			got := statuses(ends.of(id))
			return len(got) == 2 && got[0] == "scheduled#1" && got[1] == "failed#2"
		})
	})
}

// ResultTTL takes 0 (keep nothing) but no negative TTL; Call refuses a job
// that keeps nothing, whose end could pass before its wait begins.
func TestResultTTLZero_AcceptedNegativeRefusedCallRefused(t *testing.T) {
	c := connect(t, "mem://")
	ctx := ctxT(t)
	note := testtasks.Note.With(c)
	if _, err := note.Enqueue(ctx, Msg{}, runtime.ResultTTL(0)); err != nil {
		t.Fatalf("ResultTTL(0): %v", err)
	}
	if _, err := note.Enqueue(ctx, Msg{}, runtime.ResultTTL(-time.Second)); err == nil || !strings.Contains(err.Error(), "runtime.ResultTTL") {
		t.Fatalf("ResultTTL(-1s): %v; want a refusal naming the option", err)
	}
	if _, err := note.Call(ctx, Msg{}, runtime.ResultTTL(0)); err == nil || !strings.Contains(err.Error(), "keeps nothing") {
		t.Fatalf("Call with ResultTTL(0): %v; want a refusal", err)
	}
	if !runtime.NewTask[Msg, runtime.None]("lean_info", runtime.ResultTTL(0)).Info().KeepsNothing || note.Info().KeepsNothing {
		t.Fatal("Info().KeepsNothing does not say which task keeps nothing")
	}
}

// A workflow reads a step's end from its job's record, so a step keeps it
// whatever its ResultTTL: given ResultTTL(0), the step's job is still there,
// completed, once the workflow ended.
func TestResultTTLZero_AWorkflowStepKeepsItsRecord(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		wfWorker(t, c, newWFRuns())
		last := runtime.Then(wfLeft.With(c).Step("abcd", runtime.ResultTTL(0)), wfDouble.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := last.Await(ctx, id); err != nil || got != 8 {
			t.Fatalf("Await = %d, %v; want 8", got, err)
		}
		info, err := c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s := jobStatus(t, c, info.Steps[0].JobID); s != runtime.StatusCompleted {
			t.Fatalf("the first step's job is %s; want completed, its record kept", s)
		}
	})
}

// With a task history, a completed job that kept nothing in Redis is
// written to it like any other, and Job answers from there: completed.
func TestResultTTLZero_TheHistoryKeepsTheEndAndJobReadsIt(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	ctx := ctxT(t)
	task := runtime.NewTask[histArgs, runtime.None]("hist_lean", runtime.Route("histlean"), runtime.ResultTTL(0)).With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"histlean"}}))
	runtime.Handle(w, task, func(_ context.Context, a histArgs) (runtime.None, error) { return runtime.None{}, nil })
	startWorker(t, w)
	id, err := task.Enqueue(ctx, histArgs{N: 4})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the job's row", func() bool { _, ok := store.row(id); return ok })
	if n, err := c.Redis().Exists(ctx, runtime.QueueOf(c).Keys("histlean").Result(id)).Result(); err != nil || n != 0 {
		t.Fatalf("result key exists = %d, %v; want none", n, err)
	}
	info, err := c.Job(ctx, id)
	if err != nil || !info.FromHistory || info.Status != runtime.StatusCompleted || string(info.Args) != `{"N":4}` {
		t.Fatalf("Job = %+v, %v; want the completed job from the history", info, err)
	}
}
