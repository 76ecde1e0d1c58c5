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
	victim, survivor, ns, victimMaster := failoverLayout(ctx, t, cl)
	wc, plain, durable, fresh := openIn(t, cl, ns), openIn(t, cl, ns), openIn(t, cl, ns, runtime.WaitForReplicas(1, time.Second)), openIn(t, cl, ns)

	ran := startFailoverWorker(t, wc, victim, survivor)

	p := &failoverProducers{stop: make(chan struct{})}
	for _, r := range []string{victim, survivor} {
		p.wg.Add(2)
		go p.produce(plain, r, false)
		go p.produce(durable, r, true)
	}
	waitFor(t, 10*time.Second, "jobs of both routes to complete before the kill", func() bool {
		ran.mu.Lock()
		defer ran.mu.Unlock()
		return !ran.doneAt[victim].IsZero() && !ran.doneAt[survivor].IsZero()
	})

	killed := time.Now()
	if err := cl.Kill(victimMaster); err != nil {
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
		ran.mu.Lock()
		defer ran.mu.Unlock()
		return ran.doneAt[victim].After(killed.Add(promoted))
	})
	recovered := time.Since(killed)
	if got, err := testtasks.Echo.With(fresh).Call(ctx, testtasks.Msg{Text: victim}, runtime.Route(victim)); err != nil || got.Text != victim {
		t.Fatalf("Call on the victim's route after the failover = %+v, %v", got, err)
	}
	time.Sleep(500 * time.Millisecond) // load after the recovery, so jobs flow on the new master too
	jobs := p.halt()

	lost := waitCompletedOrLost(ctx, t, wc, jobs)
	dups := ran.dups()
	t.Logf("%d jobs acknowledged, %d enqueues failed with an error; a job of the surviving route enqueued %s and run %s after the kill; slots served again after %s, the victim's route running again after %s; lost: %d without WaitForReplicas, %d with; %d ran more than once; longest Enqueue %s",
		len(jobs), p.failed.Load(), survivorEnqueue.Round(time.Millisecond), survivorCall.Round(time.Millisecond), promoted.Round(time.Millisecond), recovered.Round(time.Millisecond),
		lost[false], lost[true], dups, time.Duration(p.longest.Load()).Round(time.Millisecond))
	if lost[true] > 0 {
		t.Errorf("%d jobs acknowledged by a producer that waits for a replica were lost", lost[true])
	}
	if l := time.Duration(p.longest.Load()); l > failoverCallTimeout+time.Second {
		t.Errorf("an Enqueue took %s, past its %s context", l, failoverCallTimeout)
	}
}

// failoverRuns is what the failover's worker ran.
type failoverRuns struct {
	mu     sync.Mutex
	runs   map[string]int       // job id → runs
	doneAt map[string]time.Time // route → last completion
}

// startFailoverWorker starts a worker on routes that records each run.
func startFailoverWorker(t *testing.T, wc *runtime.Client, routes ...string) *failoverRuns {
	ran := &failoverRuns{runs: map[string]int{}, doneAt: map[string]time.Time{}}
	w := runtime.NewWorker(wc, fastOpts(runtime.WorkerOptions{Routes: routes, Concurrency: 8, Lease: 2 * time.Second, Logger: testLogger(t)}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		ran.mu.Lock()
		j, _ := runtime.CurrentJob(ctx)
		ran.runs[j.ID]++
		ran.doneAt[m.Text] = time.Now()
		ran.mu.Unlock()
		return testtasks.Reply{Text: m.Text}, nil
	})
	startWorker(t, w)
	return ran
}

// dups counts the jobs run more than once.
func (ran *failoverRuns) dups() int {
	ran.mu.Lock()
	defer ran.mu.Unlock()
	dups := 0
	for _, n := range ran.runs {
		if n > 1 {
			dups++
		}
	}
	return dups
}

// failoverLayout picks the victim route, a survivor route on another master,
// and a namespace whose routes set sits on the victim's master, which it
// returns too.
func failoverLayout(ctx context.Context, t *testing.T, cl *redistest.Cluster) (victim, survivor, ns, victimMaster string) {
	t.Helper()
	probe := cl.Client(t)
	masterOf := func(key string) string {
		m, err := probe.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	keysOf := func(route string) string { return queue.RouteKeys("x", route).Active() }
	victim = "fo-a"
	victimMaster = masterOf(keysOf(victim))
	for _, r := range []string{"fo-b", "fo-c", "fo-d", "fo-e", "fo-f", "fo-g", "fo-h"} {
		if masterOf(keysOf(r)) != victimMaster {
			survivor = r
			break
		}
	}
	for i := 0; ns == ""; i++ {
		if cand := fmt.Sprintf("%s-%d", redistest.Namespace(t), i); masterOf(queue.RoutesKey(cand)) == victimMaster {
			ns = cand
		}
	}
	if survivor == "" {
		t.Fatal("no candidate route on another master than the victim's")
	}
	return victim, survivor, ns, victimMaster
}

// openIn connects a client of its own to the cluster, in namespace ns.
func openIn(t *testing.T, cl *redistest.Cluster, ns string, opts ...runtime.ConnectOption) *runtime.Client {
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := runtime.Connect(cctx, cl.URL(), append([]runtime.ConnectOption{runtime.WithNamespace(ns)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// failoverCallTimeout bounds each Enqueue of the failover's producers.
const failoverCallTimeout = 2 * time.Second

// failoverAcked is a job acknowledged to a producer, and whether that
// producer waits for a replica.
type failoverAcked struct {
	id      string
	durable bool
}

// failoverProducers are the producers of the failover run and what they were
// acknowledged.
type failoverProducers struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	acked   []failoverAcked
	failed  atomic.Int64
	longest atomic.Int64 // ns: the longest Enqueue call
}

// produce enqueues a job to route every 4 ms until stop closes.
func (p *failoverProducers) produce(c *runtime.Client, route string, isDurable bool) {
	defer p.wg.Done()
	tick := time.NewTicker(4 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(context.Background(), failoverCallTimeout)
		began := time.Now()
		id, err := testtasks.Echo.With(c).Enqueue(cctx, testtasks.Msg{Text: route}, runtime.Route(route))
		cancel()
		if d := int64(time.Since(began)); d > p.longest.Load() {
			p.longest.Store(d)
		}
		if err != nil {
			p.failed.Add(1)
			continue
		}
		p.mu.Lock()
		p.acked = append(p.acked, failoverAcked{id, isDurable})
		p.mu.Unlock()
	}
}

// halt stops the producers and returns the jobs acknowledged to them.
func (p *failoverProducers) halt() []failoverAcked {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]failoverAcked(nil), p.acked...)
}

// waitCompletedOrLost waits until every job has completed or is not found,
// and counts the lost ones by whether their producer waited for a replica.
func waitCompletedOrLost(ctx context.Context, t *testing.T, wc *runtime.Client, jobs []failoverAcked) map[bool]int {
	lost := map[bool]int{}
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
	return lost
}

// testLogger shows a worker's log in the test's output with BANANAS_TEST_LOG=1.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("BANANAS_TEST_LOG") != "1" {
		return quiet()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
