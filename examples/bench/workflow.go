package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var (
	wfMode      = flag.Bool("workflow", false, "instead of the scenarios: workflows (added latency per step of a 10-step chain against a plain job's enqueue-to-start, a 1,000-way gather against the same jobs enqueued plainly, Redis bytes per stored step), -runs times")
	wfChains    = flag.Int("chains", 200, "with -workflow: 10-step chains each round")
	wfChainConc = flag.Int("chain-conc", 4, "with -workflow: chains (and plain jobs) in flight at a time")
	wfFanout    = flag.Int("fanout", 1000, "with -workflow: steps of the gather")
	wfStored    = flag.Int("stored", 2000, "with -workflow: 10-step workflows stored, without a worker, for their bytes")
)

// chainLen is the steps of a chain: the added latency is measured at each
// of the chainLen-1 hand-overs.
const chainLen = 10

// workflowBench runs the workflow scenarios wfRuns times and reports each
// figure's runs and median.
func workflowBench(ctx context.Context, c *runtime.Client, url, ns string) {
	var stepP50, stepP99, plainP50, plainP99, wfGather, plainGather, ratio, stepBytes, jobBytes, wfBytes []float64
	for r := 1; r <= *flowRuns; r++ {
		note("workflow round %d of %d", r, *flowRuns)
		_, stop := quietWorker(c, []string{"default"}, *conc)
		s50, s99, p50, p99 := chainLatency(ctx)
		stepP50, stepP99, plainP50, plainP99 = append(stepP50, s50), append(stepP99, s99), append(plainP50, p50), append(plainP99, p99)
		wg, pg := gatherAgainstPlain(ctx, r%2 == 0)
		wfGather, plainGather, ratio = append(wfGather, wg), append(plainGather, pg), append(ratio, wg/pg)
		stop()
		sb, wb, jb := storedBytes(ctx, url, fmt.Sprintf("%s%d", ns, r))
		stepBytes, wfBytes, jobBytes = append(stepBytes, sb), append(wfBytes, wb), append(jobBytes, jb)
	}
	reportRuns("workflow_added_per_step_p50_ms", stepP50)
	reportRuns("workflow_added_per_step_p99_ms", stepP99)
	reportRuns("workflow_plain_enqueue_to_start_p50_ms", plainP50)
	reportRuns("workflow_plain_enqueue_to_start_p99_ms", plainP99)
	reportRuns(fmt.Sprintf("workflow_gather%d_ms", *wfFanout), wfGather)
	reportRuns(fmt.Sprintf("workflow_plain%d_ms", *wfFanout), plainGather)
	reportRuns("workflow_gather_vs_plain", ratio)
	reportRuns("workflow_redis_bytes_per_stored_step", stepBytes)
	reportRuns("workflow_redis_bytes_per_stored_workflow", wfBytes)
	reportRuns("workflow_redis_bytes_per_pending_plain_job", jobBytes)
}

// chain is a workflow of chainLen link steps, each given the end of the
// one before.
func chain(c *runtime.Client) runtime.Step[tasks.Stamp] {
	s := tasks.Link.With(c).Step(tasks.Stamp{})
	for range chainLen - 1 {
		s = runtime.Then(s, tasks.Link.With(c))
	}
	return s
}

// chainLatency runs wfChains chains, wfChainConc at a time, and as many
// plain ping jobs as the chains have hand-overs, wfChainConc at a time,
// each enqueued when the one before it in its goroutine started. It
// returns the p50 and p99 of a step's start after its predecessor's end,
// and of a ping's start after its enqueue, in ms.
func chainLatency(ctx context.Context) (stepP50, stepP99, plainP50, plainP99 float64) {
	var mu sync.Mutex
	var steps, plain []time.Duration
	var on atomic.Bool
	tasks.OnLink = func(prev time.Time) {
		if d := time.Since(prev); !prev.IsZero() && on.Load() {
			mu.Lock()
			steps = append(steps, d)
			mu.Unlock()
		}
	}
	var waiting sync.Map // a ping's stamp -> chan its start's latency
	tasks.OnPing = func(sent time.Time) {
		d := time.Since(sent)
		if ch, ok := waiting.Load(sent.UnixNano()); ok {
			ch.(chan time.Duration) <- d
		}
	}
	ping := func() time.Duration {
		at := time.Now().UnixNano()
		ch := make(chan time.Duration, 1)
		waiting.Store(at, ch)
		defer waiting.Delete(at)
		if _, err := tasks.Ping.Enqueue(ctx, tasks.Stamp{At: at}); err != nil {
			log.Fatal(err)
		}
		return <-ch
	}
	runChain := func() {
		s := chain(runtime.Default())
		id, err := s.Enqueue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := s.Await(ctx, id); err != nil {
			log.Fatal(err)
		}
	}
	benchkit.Parallel(*wfChainConc, 2**wfChainConc, func(int) { runChain(); ping() }) // warm up: scripts loaded, connections open
	on.Store(true)
	benchkit.Parallel(*wfChainConc, *wfChains*(chainLen-1), func(int) {
		d := ping()
		mu.Lock()
		plain = append(plain, d)
		mu.Unlock()
	})
	benchkit.Parallel(*wfChainConc, *wfChains, func(int) { runChain() })
	on.Store(false)
	mu.Lock()
	defer mu.Unlock()
	stepP50, stepP99 = benchkit.Ms(benchkit.Quantile(steps, 0.50)), benchkit.Ms(benchkit.Quantile(steps, 0.99))
	plainP50, plainP99 = benchkit.Ms(benchkit.Quantile(plain, 0.50)), benchkit.Ms(benchkit.Quantile(plain, 0.99))
	note("  added per step (%d hand-overs): p50 %.2f ms, p99 %.2f ms; plain enqueue->start (%d jobs): p50 %.2f ms, p99 %.2f ms",
		len(steps), stepP50, stepP99, len(plain), plainP50, plainP99)
	return
}

// gatherAgainstPlain times Then(Gather(wfFanout leaves), join) from
// Enqueue to Await's return, and the same leaves enqueued in one
// EnqueueMany until the last has run, plain first when plainFirst; in ms.
func gatherAgainstPlain(ctx context.Context, plainFirst bool) (wf, plain float64) {
	var ran atomic.Int64
	var target atomic.Int64
	all := make(chan struct{}, 1)
	tasks.OnLeaf = func() {
		if ran.Add(1) == target.Load() {
			all <- struct{}{}
		}
	}
	args := make([]tasks.Stamp, *wfFanout)
	for i := range args {
		args[i].At = int64(i + 1)
	}
	runPlain := func() {
		ran.Store(0)
		target.Store(int64(*wfFanout))
		t0 := time.Now()
		if _, err := tasks.Leaf.EnqueueMany(ctx, args); err != nil {
			log.Fatal(err)
		}
		<-all
		plain = benchkit.Ms(time.Since(t0))
	}
	runWF := func() {
		ran.Store(0)
		target.Store(-1)
		leaves := make([]runtime.Step[tasks.Stamp], len(args))
		for i, a := range args {
			leaves[i] = tasks.Leaf.Step(a)
		}
		final := runtime.Then(runtime.Gather(leaves...), tasks.Join)
		t0 := time.Now()
		id, err := final.Enqueue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		n, err := final.Await(ctx, id)
		if err != nil || n != len(args) {
			log.Fatalf("gather workflow %s: join saw %d leaves, err %v", id, n, err)
		}
		wf = benchkit.Ms(time.Since(t0))
	}
	if plainFirst {
		runPlain()
		runWF()
	} else {
		runWF()
		runPlain()
	}
	note("  %d-way gather: workflow %.1f ms, plain %.1f ms (%.2fx)", *wfFanout, wf, plain, wf/plain)
	return wf, plain
}

// storedBytes stores wfStored chains in namespace ns with no worker, then
// as many plain link jobs, and returns the Redis bytes per stored step, per
// stored workflow and per pending plain job. It deletes ns after.
func storedBytes(ctx context.Context, url, ns string) (perStep, perWorkflow, perJob float64) {
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	defer cleanup(ctx, c.Redis(), ns)
	if _, err := tasks.Link.With(c).Enqueue(ctx, tasks.Stamp{}); err != nil { // the route's own keys, not counted
		log.Fatal(err)
	}
	mem0 := usedMemory(ctx, c.Redis())
	benchkit.Parallel(*producers, *wfStored, func(int) {
		if _, err := chain(c).Enqueue(ctx); err != nil {
			log.Fatal(err)
		}
	})
	mem1 := usedMemory(ctx, c.Redis())
	perWorkflow = float64(mem1-mem0) / float64(*wfStored)
	perStep = perWorkflow / chainLen
	for off := 0; off < *wfStored; off += *batch {
		if _, err := tasks.Link.With(c).EnqueueMany(ctx, make([]tasks.Stamp, min(*batch, *wfStored-off))); err != nil {
			log.Fatal(err)
		}
	}
	perJob = float64(usedMemory(ctx, c.Redis())-mem1) / float64(*wfStored)
	note("  stored: %.0f bytes a step (%.0f a %d-step workflow, its first step's job pending), %.0f a pending plain job",
		perStep, perWorkflow, chainLen, perJob)
	return perStep, perWorkflow, perJob
}
