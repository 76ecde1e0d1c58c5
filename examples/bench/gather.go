package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/bananas-go/bananas/runtime"
)

var gatherMode = flag.Bool("gather", false, "instead of the scenarios: only the -fanout-way gather against the same jobs enqueued plainly (as -workflow measures it), -runs times; the figure bench/peers/bullmq prints for BullMQ's FlowProducer")

// gatherBench runs gatherAgainstPlain flowRuns times, after one round that
// is not counted (scripts loaded, connections open), and reports
// gather_<fanout>_ms (Enqueue of Then(Gather(leaves), join) until Await
// returns), gather_plain_<fanout>_ms and gather_vs_plain, each run's and
// the median.
func gatherBench(ctx context.Context, c *runtime.Client) {
	_, stop := quietWorker(c, []string{"default"}, *conc)
	defer stop()
	gatherAgainstPlain(ctx, false)
	var wf, plain, ratio []float64
	for r := 1; r <= *flowRuns; r++ {
		note("gather round %d of %d", r, *flowRuns)
		w, p := gatherAgainstPlain(ctx, r%2 == 0)
		wf, plain, ratio = append(wf, w), append(plain, p), append(ratio, w/p)
	}
	reportRuns(fmt.Sprintf("gather_%d_ms", *wfFanout), wf)
	reportRuns(fmt.Sprintf("gather_plain_%d_ms", *wfFanout), plain)
	reportRuns("gather_vs_plain", ratio)
}
