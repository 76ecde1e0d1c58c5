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
// the chaos run: it says on stdout which job it runs and, every 250 ms, how
// many goroutines it has, until it is killed or told to stop (SIGTERM).
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
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m Msg) (Reply, error) {
		j, _ := runtime.CurrentJob(ctx)
		say("ran %s %d", j.ID, j.Attempt)
		time.Sleep(5 * time.Millisecond) // the job's work
		return Reply{Text: m.Text}, nil
	})
	go func() {
		for ctx.Err() == nil {
			say("goroutines %d", goruntime.NumGoroutine())
			time.Sleep(250 * time.Millisecond)
		}
	}()
	_ = w.Run(ctx)
}

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
	ns := redistest.Namespace(t)
	url := "redis://" + px.Addr() + "/0?read_timeout=3s&write_timeout=3s"
	direct := connect(t, srv.URL(), runtime.WithNamespace(ns))

	var mu sync.Mutex // guards firstRun, runs and the workers' reports
	firstRun := map[string]time.Time{}
	runs := map[string]int{}
	workers := make([]*chaosWorker, chaosWorkers)
	start := func(i int) {
		skew := time.Duration(0)
		if i == 0 {
			skew = chaosSkew
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s", chaosWorkerEv, url, ns, skew))
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
				mu.Lock()
				switch {
				case len(f) == 3 && f[0] == "ran":
					runs[f[1]]++
					if _, ok := firstRun[f[1]]; !ok {
						firstRun[f[1]] = time.Now()
					}
				case len(f) == 2 && f[0] == "goroutines":
					n, _ := strconv.Atoi(f[1])
					w.goroutines = append(w.goroutines, n)
				}
				mu.Unlock()
			}
			_ = cmd.Wait()
			close(w.exited)
		}()
		mu.Lock()
		workers[i] = w
		mu.Unlock()
	}
	kill := func(i int) {
		_ = workers[i].cmd.Process.Kill()
		<-workers[i].exited
	}
	for i := range chaosWorkers {
		start(i)
	}
	t.Cleanup(func() {
		for i := range chaosWorkers {
			kill(i)
		}
	})

	// The producer, through the proxy like the workers.
	producer := connect(t, url, runtime.WithNamespace(ns), runtime.DefaultRetries(50))
	acked := map[string]time.Time{}
	var ackedMu sync.Mutex
	failed := 0
	var longestCall time.Duration
	stopProducing, produced := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(produced)
		tick := time.NewTicker(chaosPace)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopProducing:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), chaosCall)
			began := time.Now()
			id, err := testtasks.Echo.With(producer).Enqueue(ctx, Msg{Text: strconv.Itoa(i)})
			cancel()
			longestCall = max(longestCall, time.Since(began))
			if err != nil {
				failed++
				continue
			}
			ackedMu.Lock()
			acked[id] = time.Now()
			ackedMu.Unlock()
		}
	}()

	// The faults, each at least twice (kills three times), in a random order.
	faults := []string{"kill", "kill", "kill", "cut", "cut", "hang", "hang", "restart", "restart"}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	time.Sleep(3 * time.Second) // load before the first fault
	mu.Lock()
	before := make([]int, chaosWorkers)
	for i, w := range workers {
		before[i] = w.goroutines[len(w.goroutines)-1]
	}
	mu.Unlock()
	began := time.Now()
	killed := map[int]bool{}
	for _, f := range faults {
		switch f {
		case "kill":
			i := rng.IntN(chaosWorkers)
			kill(i)
			killed[i] = true
			t.Logf("%5.1fs SIGKILL worker %d", time.Since(began).Seconds(), i)
			time.Sleep(time.Second)
			start(i)
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
	close(stopProducing)
	<-produced
	faultsTook := time.Since(began)

	ackedMu.Lock()
	ids := make([]string, 0, len(acked))
	for id := range acked {
		ids = append(ids, id)
	}
	ackedMu.Unlock()
	ctx := context.Background()
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
	settled := waitGoroutinesSettle(&mu, workers, before, killed)

	mu.Lock()
	defer mu.Unlock()
	dups, extra := 0, 0
	var longestWait time.Duration
	for _, id := range ids {
		if n := runs[id]; n > 1 {
			dups++
			extra += n - 1
		}
		if at, ok := firstRun[id]; ok {
			longestWait = max(longestWait, at.Sub(acked[id]))
		}
	}
	t.Logf("faults over %s; %d jobs acknowledged, %d enqueues failed with an error (longest call %s, bound %s); %d ran more than once (%d extra runs); longest wait from acknowledgement to first run %s",
		faultsTook.Round(time.Second), len(ids), failed, longestCall.Round(time.Millisecond), chaosCall, dups, extra, longestWait.Round(time.Millisecond))
	if !settled {
		t.Errorf("the workers' goroutines did not settle within %s of the drain", chaosSettle)
	}
	for i, w := range workers {
		note := ""
		if killed[i] {
			note = " (killed and started again: its before is its new process's report 2 s after start)"
		}
		t.Logf("worker %d%s: goroutines %d before, %d after%s", i, map[bool]string{true: " (clock 1m ahead)"}[i == 0], before[i], w.goroutines[len(w.goroutines)-1], note)
		if after := w.goroutines[len(w.goroutines)-1]; after > before[i]+chaosConc {
			t.Errorf("worker %d: %d goroutines after the faults, %d before", i, after, before[i])
		}
	}
	if len(left) > 0 {
		t.Errorf("%d of %d acknowledged jobs not completed %s after the faults", len(left), len(ids), chaosDrain)
		for _, id := range left[:min(5, len(left))] {
			t.Errorf("job %s: runs %d; in Redis: %s", id, runs[id], whereIs(ctx, direct, id))
		}
	}
	if longestCall > chaosCall+250*time.Millisecond {
		t.Errorf("an enqueue took %s, past its %s context", longestCall, chaosCall)
	}
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
