package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// The workflow chaos run (BANANAS_CHAOS=1 BANANAS_CHAOS_WORKFLOW=1): the
// chaos run's workers, proxy, Redis and faults, with a producer that submits
// workflows instead of jobs: chains of chaosChain steps, and fan-outs of
// chaosFan steps of 300 ms (so that faults catch steps running) gathered
// into a join with one step after it; two in ten have a step that fails for
// good. At the end every acknowledged workflow has ended as it was built to
// (completed with the result its steps add up to, or failed by its failing
// step, which says why), and no step's handler ran to completion twice in
// one attempt: only a lost lease (the reaper records it as a failed
// attempt) may run a completed step again.
const (
	chaosWFPace = 150 * time.Millisecond // between two submissions
	chaosChain  = 5
	chaosFan    = 6
	chaosFailAt = "fail@" // a step whose args' Text is fail@<its N> fails for good
	chaosSlow   = "slow"  // a step whose args' Text is slow runs 300 ms
)

// The steps of the workflow chaos run: each link adds one to N and passes
// Text on; a join sums its predecessors' N.
var (
	chaosLink = runtime.NewTask[Msg, Msg]("t_chaos_link")
	chaosJoin = runtime.NewTask[[]Msg, Msg]("t_chaos_join")
)

// chaosWorkflow says the chaos run submits workflows
// (BANANAS_CHAOS_WORKFLOW=1, which the worker processes inherit).
func chaosWorkflow() bool { return os.Getenv("BANANAS_CHAOS_WORKFLOW") != "" }

// handleChaosSteps registers the workflow chaos run's steps on w: each says
// when it starts and when it ran to completion, as the jobs of the chaos
// run do.
func handleChaosSteps(w *runtime.Worker, say func(format string, args ...any)) {
	runtime.Handle(w, chaosLink, func(ctx context.Context, m Msg) (Msg, error) {
		j, _ := runtime.CurrentJob(ctx)
		say("ran %s %d", j.ID, j.Attempt)
		time.Sleep(5 * time.Millisecond) // the step's work
		if m.Text == chaosSlow {
			time.Sleep(300 * time.Millisecond) // long enough for a kill or a hang to catch it running
		}
		if m.Text == chaosFailAt+strconv.Itoa(m.N) {
			return Msg{}, fmt.Errorf("step %d fails for good: %w", m.N, runtime.SkipRetry)
		}
		say("done %s %d", j.ID, j.Attempt)
		return Msg{Text: m.Text, N: m.N + 1}, nil
	})
	runtime.Handle(w, chaosJoin, func(ctx context.Context, ms []Msg) (Msg, error) {
		j, _ := runtime.CurrentJob(ctx)
		say("ran %s %d", j.ID, j.Attempt)
		out := Msg{}
		for _, m := range ms {
			out.N += m.N
		}
		say("done %s %d", j.ID, j.Attempt)
		return out, nil
	})
}

// chaosWF is a workflow the producer submitted: its final step, what its
// result's N is when it completes, and whether a step of it fails.
type chaosWF struct {
	final runtime.Step[Msg]
	want  int
	fails bool
}

// chaosWorkflowOf is the i-th workflow of the producer: a chain (even i)
// or a fan-out of slow steps gathered into a join and a link (odd i);
// i%10 == 0 fails at the chain's third step, i%10 == 3 at the fan-out's
// third branch.
func chaosWorkflowOf(c *runtime.Client, i int) chaosWF {
	link := chaosLink.With(c)
	if i%2 == 0 {
		wf := chaosWF{want: chaosChain, fails: i%10 == 0}
		first := Msg{}
		if wf.fails {
			first.Text = chaosFailAt + "2"
		}
		s := link.Step(first)
		for range chaosChain - 1 {
			s = runtime.Then(s, link)
		}
		wf.final = s
		return wf
	}
	wf := chaosWF{want: chaosFan + 1, fails: i%10 == 3}
	branches := make([]runtime.Step[Msg], chaosFan)
	for b := range branches {
		m := Msg{Text: chaosSlow}
		if wf.fails && b == 2 {
			m.Text = chaosFailAt + "0"
		}
		branches[b] = link.Step(m)
	}
	wf.final = runtime.Then(runtime.Then(runtime.Gather(branches...), chaosJoin.With(c)), link)
	return wf
}

func TestChaos_EveryAcknowledgedWorkflowEndsAsBuiltThroughKillsCutsAndARedisRestart(t *testing.T) {
	if os.Getenv("BANANAS_CHAOS") == "" || !chaosWorkflow() {
		t.Skip("the workflow chaos run takes about three minutes: BANANAS_CHAOS=1 BANANAS_CHAOS_WORKFLOW=1 make test-chaos")
	}
	r, rng, px, srv, direct := startChaos(t)
	p := startChaosWFProducer(connect(t, r.url, runtime.WithNamespace(r.ns), runtime.DefaultRetries(50)))
	time.Sleep(3 * time.Second) // load before the first fault
	r.noteBefore()
	began := time.Now()
	r.injectFaults(rng, px, srv)
	wfs := p.stop()
	faultsTook := time.Since(began)

	ctx := context.Background()
	drained := time.Now()
	left := waitWorkflowsEnded(ctx, direct, wfs)
	drainTook := time.Since(drained)
	settled := waitGoroutinesSettle(&r.mu, r.workers, r.before, r.killed)
	ended := checkWorkflowEnds(t, ctx, direct, wfs, left)
	unacked := checkUnacknowledgedEnded(t, ctx, direct, r.ns, wfs)

	r.mu.Lock()
	defer r.mu.Unlock()
	again, same := r.completedTwice()
	t.Logf("faults over %s; %d workflows acknowledged (%d steps, gathers counted), %d submissions failed with an error (longest call %s), %s; %s, the last ended %s after the faults; %d steps ran %d jobs to completion, %d of them more than once after a lost lease, %d more than once in one attempt",
		faultsTook.Round(time.Second), len(wfs), p.steps, p.failed, p.longestCall.Round(time.Millisecond), unacked, ended, drainTook.Round(100*time.Millisecond), len(r.done), totalRuns(r.done), len(again), len(same))
	if !settled {
		t.Errorf("the workers' goroutines did not settle within %s of the drain", chaosSettle)
	}
	r.checkGoroutines()
	for _, id := range same[:min(5, len(same))] {
		t.Errorf("step job %s ran to completion in attempts %v: twice in one attempt, with no lease lost between", id, r.done[id])
	}
	if len(left) > 0 {
		t.Errorf("%d of %d acknowledged workflows still running %s after the faults", len(left), len(wfs), chaosDrain)
		for _, id := range left[:min(5, len(left))] {
			t.Errorf("workflow %s: %s", id, describeWorkflow(ctx, direct, id))
		}
	}
}

// completedTwice returns the jobs whose handler ran to completion more than
// once: in attempts all different (each after a lost lease, which the
// reaper counts as a failed attempt), and those that did twice in one
// attempt. The caller holds r.mu.
func (r *chaosRun) completedTwice() (afterLeaseLoss, inOneAttempt []string) {
	for id, attempts := range r.done {
		if len(attempts) < 2 {
			continue
		}
		s := slices.Sorted(slices.Values(attempts))
		if len(slices.Compact(s)) == len(attempts) {
			afterLeaseLoss = append(afterLeaseLoss, id)
		} else {
			inOneAttempt = append(inOneAttempt, id)
		}
	}
	return afterLeaseLoss, inOneAttempt
}

func totalRuns(done map[string][]int) int {
	n := 0
	for _, a := range done {
		n += len(a)
	}
	return n
}

// chaosWFProducer submits one workflow every chaosWFPace, each call bounded
// by chaosCall, and keeps those acknowledged to it.
type chaosWFProducer struct {
	mu          sync.Mutex // guards acked while producing
	acked       map[string]chaosWF
	steps       int
	failed      int
	longestCall time.Duration
	halt, done  chan struct{}
}

func startChaosWFProducer(producer *runtime.Client) *chaosWFProducer {
	p := &chaosWFProducer{acked: map[string]chaosWF{}, halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(chaosWFPace)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.halt:
				return
			case <-tick.C:
			}
			wf := chaosWorkflowOf(producer, i)
			ctx, cancel := context.WithTimeout(context.Background(), chaosCall)
			began := time.Now()
			id, err := wf.final.Enqueue(ctx)
			cancel()
			p.longestCall = max(p.longestCall, time.Since(began))
			if err != nil {
				p.failed++
				continue
			}
			p.mu.Lock()
			p.acked[id] = wf
			p.steps += map[bool]int{true: chaosChain, false: chaosFan + 3}[i%2 == 0]
			p.mu.Unlock()
		}
	}()
	return p
}

// stop stops the producer and returns the workflows acknowledged to it.
func (p *chaosWFProducer) stop() map[string]chaosWF {
	close(p.halt)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked
}

// waitWorkflowsEnded waits, up to chaosDrain, until every workflow of wfs
// has ended (completed, failed or canceled), and returns those that have
// not.
func waitWorkflowsEnded(ctx context.Context, direct *runtime.Client, wfs map[string]chaosWF) []string {
	left := make([]string, 0, len(wfs))
	for id := range wfs {
		left = append(left, id)
	}
	deadline := time.Now().Add(chaosDrain)
	for len(left) > 0 && time.Now().Before(deadline) {
		left = slices.DeleteFunc(left, func(id string) bool {
			info, err := direct.Workflow(ctx, id)
			return err == nil && info.Status != "running" && info.Status != "pending"
		})
		if len(left) > 0 {
			time.Sleep(200 * time.Millisecond) // between two reads of the workflows still out, bounded by deadline
		}
	}
	return left
}

// checkWorkflowEnds fails the test for each ended workflow of wfs that did
// not end as it was built to: completed with its sum, or failed by its
// failing step with that step's error; it returns a summary of the ends.
func checkWorkflowEnds(t *testing.T, ctx context.Context, direct *runtime.Client, wfs map[string]chaosWF, left []string) string {
	completed, failed, wrong := 0, 0, 0
	for id, wf := range wfs {
		if slices.Contains(left, id) {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := wf.final.Await(actx, id) // through the producer's client, the faults over
		cancel()
		var we *runtime.WorkflowError
		switch {
		case err == nil && !wf.fails && got.N == wf.want:
			completed++
		case wf.fails && errors.As(err, &we) && strings.Contains(err.Error(), "fails for good"):
			failed++
		default:
			wrong++
			if wrong <= 5 {
				t.Errorf("workflow %s (built to fail: %v, result N %d): Await = %+v, %v; %s", id, wf.fails, wf.want, got, err, describeWorkflow(ctx, direct, id))
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d workflows did not end as they were built to", wrong)
	}
	return fmt.Sprintf("%d completed with their sums, %d failed by their failing step, %d otherwise, %d still running", completed, failed, wrong, len(left))
}

// checkUnacknowledgedEnded fails the test for a workflow stored in ns but
// not acknowledged to the producer (its submission failed after its record
// was written: the keeper makes its first steps) that has not ended by now,
// the acknowledged ones having ended; it returns a summary.
func checkUnacknowledgedEnded(t *testing.T, ctx context.Context, direct *runtime.Client, ns string, wfs map[string]chaosWF) string {
	var ids []string
	iter := direct.Redis().Scan(ctx, 0, ns+":workflow:{*}", 1000).Iterator()
	for iter.Next(ctx) {
		id := strings.TrimSuffix(strings.TrimPrefix(iter.Val(), ns+":workflow:{"), "}")
		if _, ok := wfs[id]; !ok {
			ids = append(ids, id)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	ends := map[string]int{}
	for _, id := range ids {
		info, err := direct.Workflow(ctx, id)
		if err != nil {
			t.Errorf("unacknowledged workflow %s: %v", id, err)
			continue
		}
		ends[info.Status]++
		if info.Status == "running" || info.Status == "pending" {
			t.Errorf("unacknowledged workflow %s has not ended: %s", id, describeWorkflow(ctx, direct, id))
		}
	}
	return fmt.Sprintf("%d of them stored all the same, ended: %v", len(ids), ends)
}

// describeWorkflow says how workflow id stands: its status and each step's.
func describeWorkflow(ctx context.Context, c *runtime.Client, id string) string {
	info, err := c.Workflow(ctx, id)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s;", info.Status)
	for _, s := range info.Steps {
		fmt.Fprintf(&b, " %s(%s %s %q)", s.Label, s.JobID, s.Status, s.Error)
	}
	return b.String()
}
