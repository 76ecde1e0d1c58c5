package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A master of a Redis Cluster with a replica each is killed under load. The
// route on another master goes on at once, for the worker and for producers
// that never enqueued to it before (the routes set sits on the killed master
// too); workers and producers follow the promoted replica without a restart;
// every job acknowledged to a producer that waits for a replica completes,
// and what a producer that does not wait loses is counted.
func TestCluster_WorkersAndProducersFollowAFailover(t *testing.T) {
	t.Parallel()
	cl := redistest.StartClusterWithReplicas(t)
	ctx := ctxT(t)
	probe := cl.Client(t)
	masterOf := func(key string) string {
		m, err := probe.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	keysOf := func(route string) string { return queue.RouteKeys("x", route).Active() }
	victim, survivor := "fo-a", ""
	for _, r := range []string{"fo-b", "fo-c", "fo-d", "fo-e", "fo-f", "fo-g", "fo-h"} {
		if masterOf(keysOf(r)) != masterOf(keysOf(victim)) {
			survivor = r
			break
		}
	}
	ns := ""
	for i := 0; ns == ""; i++ {
		if cand := fmt.Sprintf("%s-%d", redistest.Namespace(t), i); masterOf(queue.RoutesKey(cand)) == masterOf(keysOf(victim)) {
			ns = cand
		}
	}
	if survivor == "" {
		t.Fatal("no candidate route on another master than the victim's")
	}
	open := func(opts ...runtime.ConnectOption) *runtime.Client {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := runtime.Connect(cctx, cl.URL(), append([]runtime.ConnectOption{runtime.WithNamespace(ns)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	wc, plain, durable, fresh := open(), open(), open(runtime.WaitForReplicas(1, time.Second)), open()

	var mu sync.Mutex
	runs := map[string]int{}
	doneAt := map[string]time.Time{} // route → last completion
	w := runtime.NewWorker(wc, fastOpts(runtime.WorkerOptions{Routes: []string{victim, survivor}, Concurrency: 8, Lease: 2 * time.Second, Logger: testLogger(t)}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		mu.Lock()
		j, _ := runtime.CurrentJob(ctx)
		runs[j.ID]++
		doneAt[m.Text] = time.Now()
		mu.Unlock()
		return testtasks.Reply{Text: m.Text}, nil
	})
	startWorker(t, w)

	type acked struct {
		id      string
		durable bool
	}
	var (
		ackedMu   sync.Mutex
		ackedJobs []acked
		failed    atomic.Int64
		longest   atomic.Int64 // ns: the longest Enqueue call
	)
	const callTimeout = 2 * time.Second
	stop := make(chan struct{})
	var producers sync.WaitGroup
	produce := func(c *runtime.Client, route string, isDurable bool) {
		defer producers.Done()
		tick := time.NewTicker(4 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			began := time.Now()
			id, err := testtasks.Echo.With(c).Enqueue(cctx, testtasks.Msg{Text: route}, runtime.Route(route))
			cancel()
			if d := int64(time.Since(began)); d > longest.Load() {
				longest.Store(d)
			}
			if err != nil {
				failed.Add(1)
				continue
			}
			ackedMu.Lock()
			ackedJobs = append(ackedJobs, acked{id, isDurable})
			ackedMu.Unlock()
		}
	}
	for _, r := range []string{victim, survivor} {
		producers.Add(2)
		go produce(plain, r, false)
		go produce(durable, r, true)
	}
	waitFor(t, 10*time.Second, "jobs of both routes to complete before the kill", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !doneAt[victim].IsZero() && !doneAt[survivor].IsZero()
	})

	killed := time.Now()
	if err := cl.Kill(masterOf(keysOf(victim))); err != nil {
		t.Fatal(err)
	}
	// The survivor's route takes jobs from a producer that never enqueued
	// to it, and runs them, while the routes set and the victim's slots have
	// no master.
	id, err := testtasks.Echo.With(fresh).Enqueue(ctx, testtasks.Msg{Text: survivor}, runtime.Route(survivor))
	if err != nil {
		t.Fatalf("Enqueue on the surviving route right after the kill: %v", err)
	}
	survivorEnqueue := time.Since(killed)
	waitFor(t, 10*time.Second, "the job enqueued to the surviving route after the kill to complete", func() bool {
		info, err := wc.Job(ctx, id)
		return err == nil && info.Status == runtime.StatusCompleted
	})
	survivorCall := time.Since(killed)

	if err := cl.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	promoted := time.Since(killed)
	waitFor(t, 20*time.Second, "the victim's route to run jobs again without a restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return doneAt[victim].After(killed.Add(promoted))
	})
	recovered := time.Since(killed)
	if got, err := testtasks.Echo.With(fresh).Call(ctx, testtasks.Msg{Text: victim}, runtime.Route(victim)); err != nil || got.Text != victim {
		t.Fatalf("Call on the victim's route after the failover = %+v, %v", got, err)
	}
	time.Sleep(500 * time.Millisecond) // load after the recovery, so jobs flow on the new master too
	close(stop)
	producers.Wait()

	lost := map[bool]int{}
	ackedMu.Lock()
	jobs := append([]acked(nil), ackedJobs...)
	ackedMu.Unlock()
	waitFor(t, 30*time.Second, "every acknowledged job to complete or be found lost", func() bool {
		lost = map[bool]int{}
		for _, j := range jobs {
			info, err := wc.Job(ctx, j.id)
			switch {
			case errors.Is(err, runtime.ErrJobNotFound):
				lost[j.durable]++
			case err != nil || info.Status != runtime.StatusCompleted:
				return false
			}
		}
		return true
	})
	mu.Lock()
	dups := 0
	for _, n := range runs {
		if n > 1 {
			dups++
		}
	}
	mu.Unlock()
	t.Logf("%d jobs acknowledged, %d enqueues failed with an error; a job of the surviving route enqueued %s and run %s after the kill; slots served again after %s, the victim's route running again after %s; lost: %d without WaitForReplicas, %d with; %d ran more than once; longest Enqueue %s",
		len(jobs), failed.Load(), survivorEnqueue.Round(time.Millisecond), survivorCall.Round(time.Millisecond), promoted.Round(time.Millisecond), recovered.Round(time.Millisecond),
		lost[false], lost[true], dups, time.Duration(longest.Load()).Round(time.Millisecond))
	if lost[true] > 0 {
		t.Errorf("%d jobs acknowledged by a producer that waits for a replica were lost", lost[true])
	}
	if l := time.Duration(longest.Load()); l > callTimeout+time.Second {
		t.Errorf("an Enqueue took %s, past its %s context", l, callTimeout)
	}
}

// testLogger shows a worker's log in the test's output with BANANAS_TEST_LOG=1.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("BANANAS_TEST_LOG") != "1" {
		return quiet()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
