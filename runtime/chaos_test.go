package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/faultproxy"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The chaos run (make test-chaos, BANANAS_CHAOS=1): three worker processes
// (one with its clock a minute ahead) and a producer reach a Redis that
// persists every write (appendfsync always) through a proxy, while workers
// are SIGKILLed, connections cut and held silent, and Redis killed and
// restarted. At the end every job acknowledged to the producer has run to
// completion at least once.
const (
	chaosWorkers  = 3
	chaosConc     = 8
	chaosLease    = 2 * time.Second
	chaosPace     = 20 * time.Millisecond // between two enqueues
	chaosCall     = time.Second           // each enqueue's context: shorter than the read timeout
	chaosGap      = 11 * time.Second      // between two faults, on average
	chaosSkew     = time.Minute           // the clock of worker 0
	chaosDrain    = 90 * time.Second      // after the faults, for every job to finish
	chaosSettle   = 10 * time.Second      // after the drain, for the workers' goroutines to settle
	chaosWorkerEv = "BANANAS_TEST_CHAOS_WORKER"
)

// runChaosWorker is the body of the test binary re-executed as a worker of
// the chaos run: it says on stdout which job it runs, which it ran to
// completion (id and attempt) and, every 250 ms, how many goroutines it
// has, until it is killed or told to stop (SIGTERM).
func runChaosWorker(spec string) {
	url, rest, _ := strings.Cut(spec, "|")
	ns, skew, _ := strings.Cut(rest, "|")
	ahead, _ := time.ParseDuration(skew)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var c *runtime.Client
	for { // Redis may be restarting or cut off when the process starts
		var err error
		if c, err = runtime.Connect(ctx, url, runtime.WithNamespace(ns), runtime.WithLocalClock(func() time.Time { return time.Now().Add(ahead) })); err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // until Redis answers; the parent kills the process at the end
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Lease: chaosLease, Concurrency: chaosConc, Logger: quiet()})
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	run := func(ctx context.Context, m Msg) (Reply, error) {
		j, _ := runtime.CurrentJob(ctx)
		say("ran %s %d", j.ID, j.Attempt)
		time.Sleep(5 * time.Millisecond) // the job's work
		say("done %s %d", j.ID, j.Attempt)
		return Reply{Text: m.Text}, nil
	}
	switch {
	case chaosWorkflow():
		handleChaosSteps(w, say)
	case chaosKeyed():
		runtime.Handle(w, capped, run)
	default:
		runtime.Handle(w, testtasks.Echo, run)
	}
	go func() {
		for ctx.Err() == nil {
			say("goroutines %d", goruntime.NumGoroutine())
			time.Sleep(250 * time.Millisecond)
		}
	}()
	_ = w.Run(ctx)
}

// chaosKeyed says the run's jobs are keyed and capped (BANANAS_CHAOS_KEYED=1,
// which the worker processes inherit): 20 keys, one running job each, so
// that every kill, cut and restart also hits slots held and freed.
func chaosKeyed() bool { return os.Getenv("BANANAS_CHAOS_KEYED") != "" }

// chaosWorker is one worker process of the run and what it reported.
type chaosWorker struct {
	cmd        *exec.Cmd
	exited     chan struct{}
	goroutines []int
}

func TestChaos_EveryAcknowledgedJobRunsThroughKillsCutsAndARedisRestart(t *testing.T) {
	if os.Getenv("BANANAS_CHAOS") == "" {
		t.Skip("the chaos run takes about three minutes: make test-chaos (BANANAS_CHAOS=1)")
	}
	if chaosWorkflow() {
		t.Skip("BANANAS_CHAOS_WORKFLOW=1 runs the workflow chaos run instead")
	}
	r, rng, px, srv, direct := startChaos(t)

	// The producer, through the proxy like the workers.
	p := startChaosProducer(connect(t, r.url, runtime.WithNamespace(r.ns), runtime.DefaultRetries(50)))
	time.Sleep(3 * time.Second) // load before the first fault
	r.noteBefore()
	began := time.Now()
	r.injectFaults(rng, px, srv)
	ids := p.stop()
	faultsTook := time.Since(began)

	ctx := context.Background()
	left := waitCompleted(ctx, direct, ids)
	settled := waitGoroutinesSettle(&r.mu, r.workers, r.before, r.killed)

	r.mu.Lock()
	defer r.mu.Unlock()
	dups, extra := 0, 0
	var longestWait time.Duration
	for _, id := range ids {
		if n := r.runs[id]; n > 1 {
			dups++
			extra += n - 1
		}
		if at, ok := r.firstRun[id]; ok {
			longestWait = max(longestWait, at.Sub(p.acked[id]))
		}
	}
	t.Logf("faults over %s; %d jobs acknowledged, %d enqueues failed with an error (longest call %s, bound %s); %d ran more than once (%d extra runs); longest wait from acknowledgement to first run %s",
		faultsTook.Round(time.Second), len(ids), p.failed, p.longestCall.Round(time.Millisecond), chaosCall, dups, extra, longestWait.Round(time.Millisecond))
	if !settled {
		t.Errorf("the workers' goroutines did not settle within %s of the drain", chaosSettle)
	}
	r.checkGoroutines()
	if len(left) > 0 {
		t.Errorf("%d of %d acknowledged jobs not completed %s after the faults", len(left), len(ids), chaosDrain)
		for _, id := range left[:min(5, len(left))] {
			t.Errorf("job %s: runs %d; in Redis: %s", id, r.runs[id], whereIs(ctx, direct, id))
		}
	}
	if p.longestCall > chaosCall+250*time.Millisecond {
		t.Errorf("an enqueue took %s, past its %s context", p.longestCall, chaosCall)
	}
}

// startChaos starts the chaos run's Redis (persisting every write), the
// proxy in front of it and the worker processes behind the proxy, and
// returns the run, its random order of faults, and a client that reaches
// Redis directly.
func startChaos(t *testing.T) (*chaosRun, *rand.Rand, *faultproxy.Proxy, *redistest.Server, *runtime.Client) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("BANANAS_CHAOS_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d (BANANAS_CHAOS_SEED repeats the run's order of faults)", seed)

	srv := redistest.StartPersistent(t)
	px, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	r := &chaosRun{
		t:        t,
		ns:       redistest.Namespace(t),
		url:      "redis://" + px.Addr() + "/0?read_timeout=3s&write_timeout=3s",
		firstRun: map[string]time.Time{},
		runs:     map[string]int{},
		done:     map[string][]int{},
		workers:  make([]*chaosWorker, chaosWorkers),
		killed:   map[int]bool{},
	}
	direct := connect(t, srv.URL(), runtime.WithNamespace(r.ns))
	for i := range chaosWorkers {
		r.start(i)
	}
	t.Cleanup(func() {
		for i := range chaosWorkers {
			r.kill(i)
		}
	})
	return r, rng, px, srv, direct
}

// chaosRun is the worker processes of the chaos run and what they reported.
type chaosRun struct {
	t       *testing.T
	url, ns string

	mu       sync.Mutex // guards firstRun, runs, done and the workers' reports
	firstRun map[string]time.Time
	runs     map[string]int
	done     map[string][]int // job id -> the attempts whose handler ran to completion
	workers  []*chaosWorker
	before   []int        // each worker's goroutines before the first fault
	killed   map[int]bool // the workers SIGKILLed during the run
}

// start starts worker i (worker 0 with its clock chaosSkew ahead) and reads
// its reports until it exits.
func (r *chaosRun) start(i int) {
	t := r.t
	skew := time.Duration(0)
	if i == 0 {
		skew = chaosSkew
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s", chaosWorkerEv, r.url, r.ns, skew))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &chaosWorker{cmd: cmd, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			r.mu.Lock()
			switch {
			case len(f) == 3 && f[0] == "ran":
				r.runs[f[1]]++
				if _, ok := r.firstRun[f[1]]; !ok {
					r.firstRun[f[1]] = time.Now()
				}
			case len(f) == 3 && f[0] == "done":
				attempt, _ := strconv.Atoi(f[2])
				r.done[f[1]] = append(r.done[f[1]], attempt)
			case len(f) == 2 && f[0] == "goroutines":
				n, _ := strconv.Atoi(f[1])
				w.goroutines = append(w.goroutines, n)
			}
			r.mu.Unlock()
		}
		_ = cmd.Wait()
		close(w.exited)
	}()
	r.mu.Lock()
	r.workers[i] = w
	r.mu.Unlock()
}

// noteBefore keeps each worker's last goroutine count as its count before
// the faults.
func (r *chaosRun) noteBefore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.before = make([]int, chaosWorkers)
	for i, w := range r.workers {
		r.before[i] = w.goroutines[len(w.goroutines)-1]
	}
}

// kill SIGKILLs worker i and waits for it to exit.
func (r *chaosRun) kill(i int) {
	_ = r.workers[i].cmd.Process.Kill()
	<-r.workers[i].exited
}

// injectFaults runs the faults, each at least twice (kills three times), in
// a random order, chaosGap apart on average.
func (r *chaosRun) injectFaults(rng *rand.Rand, px *faultproxy.Proxy, srv *redistest.Server) {
	t := r.t
	faults := []string{"kill", "kill", "kill", "cut", "cut", "hang", "hang", "restart", "restart"}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	began := time.Now()
	for _, f := range faults {
		switch f {
		case "kill":
			i := rng.IntN(chaosWorkers)
			r.kill(i)
			r.killed[i] = true
			t.Logf("%5.1fs SIGKILL worker %d", time.Since(began).Seconds(), i)
			time.Sleep(time.Second)
			r.start(i)
		case "cut":
			d := time.Duration(2+rng.IntN(4)) * time.Second
			t.Logf("%5.1fs cut every connection for %s", time.Since(began).Seconds(), d)
			px.CutFor(d)
		case "hang":
			d := time.Duration(2+rng.IntN(3)) * time.Second
			t.Logf("%5.1fs hold every connection silent for %s", time.Since(began).Seconds(), d)
			px.Hang()
			time.Sleep(d)
			px.Resume()
		case "restart":
			t.Logf("%5.1fs SIGKILL Redis and start it again", time.Since(began).Seconds())
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(chaosGap/2 + time.Duration(rng.Int64N(int64(chaosGap))))
	}
}

// checkGoroutines logs each worker's goroutines before and after the faults
// and fails the test for a worker left with more than chaosConc extra. The
// caller holds r.mu.
func (r *chaosRun) checkGoroutines() {
	t := r.t
	for i, w := range r.workers {
		note := ""
		if r.killed[i] {
			note = " (killed and started again: its before is its new process's report 2 s after start)"
		}
		t.Logf("worker %d%s: goroutines %d before, %d after%s", i, map[bool]string{true: " (clock 1m ahead)"}[i == 0], r.before[i], w.goroutines[len(w.goroutines)-1], note)
		if after := w.goroutines[len(w.goroutines)-1]; after > r.before[i]+chaosConc {
			t.Errorf("worker %d: %d goroutines after the faults, %d before", i, after, r.before[i])
		}
	}
}

// chaosProducer enqueues one job every chaosPace, each call bounded by
// chaosCall, and keeps the ids acknowledged to it.
type chaosProducer struct {
	mu          sync.Mutex // guards acked while producing
	acked       map[string]time.Time
	failed      int
	longestCall time.Duration
	halt, done  chan struct{}
}

func startChaosProducer(producer *runtime.Client) *chaosProducer {
	p := &chaosProducer{acked: map[string]time.Time{}, halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(chaosPace)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.halt:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), chaosCall)
			began := time.Now()
			var id string
			var err error
			if chaosKeyed() { // 20 keys, each capped at one running job
				id, err = capped.With(producer).Enqueue(ctx, Msg{Text: strconv.Itoa(i)}, runtime.Key(strconv.Itoa(i%20)))
			} else {
				id, err = testtasks.Echo.With(producer).Enqueue(ctx, Msg{Text: strconv.Itoa(i)})
			}
			cancel()
			p.longestCall = max(p.longestCall, time.Since(began))
			if err != nil {
				p.failed++
				continue
			}
			p.mu.Lock()
			p.acked[id] = time.Now()
			p.mu.Unlock()
		}
	}()
	return p
}

// stop stops the producer and returns the ids acknowledged to it.
func (p *chaosProducer) stop() []string {
	close(p.halt)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.acked))
	for id := range p.acked {
		ids = append(ids, id)
	}
	return ids
}

// waitCompleted waits, up to chaosDrain, until every job of ids has
// completed, and returns those that have not.
func waitCompleted(ctx context.Context, direct *runtime.Client, ids []string) []string {
	left := slices.Clone(ids)
	deadline := time.Now().Add(chaosDrain)
	for len(left) > 0 && time.Now().Before(deadline) {
		left = slices.DeleteFunc(left, func(id string) bool {
			info, err := direct.Job(ctx, id)
			return err == nil && info.Status == runtime.StatusCompleted
		})
		if len(left) > 0 {
			time.Sleep(200 * time.Millisecond) // between two reads of the jobs still out, bounded by deadline
		}
	}
	return left
}

// waitGoroutinesSettle waits, up to chaosSettle, until every worker (idle
// now, reporting every 250 ms) has reported twice since the call and its last
// count is within chaosConc of its count before the faults. A worker killed
// and started again counts from its new process's report 2 s after start,
// which before is set to. It reports whether every worker settled.
func waitGoroutinesSettle(mu *sync.Mutex, workers []*chaosWorker, before []int, killed map[int]bool) bool {
	mu.Lock()
	marks := make([]int, len(workers))
	for i, w := range workers {
		marks[i] = len(w.goroutines)
		if killed[i] {
			before[i] = w.goroutines[min(8, len(w.goroutines)-1)]
		}
	}
	mu.Unlock()
	settleBy := time.Now().Add(chaosSettle)
	for {
		mu.Lock()
		settled := true
		for i, w := range workers {
			n := len(w.goroutines)
			if n < marks[i]+2 || w.goroutines[n-1] > before[i]+chaosConc {
				settled = false
			}
		}
		mu.Unlock()
		if settled || time.Now().After(settleBy) {
			return settled
		}
		time.Sleep(50 * time.Millisecond) // between two looks at the reports, bounded by settleBy
	}
}
