package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	rpprof "runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/faultproxy"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The network faults a worker must come through without losing a job: a cut
// that drops every connection and refuses new ones, then a hang that keeps
// every connection open and silent for longer than a lease, then a slow link
// (faultLatency each way) for faultSlow. During the hang
// go-redis times out (read_timeout below) and resends the same command on
// another connection; every copy reaches Redis when the hang ends, each runs,
// and only the last one's reply is read.
//
// The read timeout is chosen so that the hang ends while a resent call is
// still on its way (4 tries of 3 s outlast 8 s): that call's copies all run,
// and its caller carries on with one answer. With 1 s, go-redis gives up
// within the hang and the caller sees an error, which is the easy case.
const (
	faultJobs    = 300
	faultPace    = 50 * time.Millisecond // between two enqueues: the load spans both faults
	faultLease   = 3 * time.Second
	faultCut     = 5 * time.Second
	faultHang    = 8 * time.Second
	faultConc    = 8 // per worker; a worker keeps up to this many handler goroutines
	faultSlow    = 30 * time.Second
	faultLatency = 200 * time.Millisecond
	faultDrain   = 15 * time.Second // after the faults, for every job to finish
	faultURLOpt  = "?read_timeout=3s&write_timeout=3s"
	// faultCall bounds each enqueue of the producer that goes through the
	// faults: it gets an answer or an error within it, never a hang.
	faultCall = time.Second
)

// Through a cut, a silent hang longer than the lease and a slow link, with
// go-redis resending timed-out commands (its default retries), every job
// enqueued finishes: none is lost, none dead-lettered, and a job runs more
// than once only when its lease expired and it was recovered, which counts
// an attempt. A producer behind the same faults gets an answer or an error
// within its context on every call. The workers' goroutines are counted by
// a pprof label: as many after the faults as before, none after they stop.
func TestWorker_EveryJobFinishesThroughCutsAndSilentHangs(t *testing.T) {
	t.Parallel()
	began := time.Now()
	srv := redistest.Start(t)
	px, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	ns := redistest.Namespace(t)
	// Producers and the checks go straight to Redis: the faults are the
	// workers'. Retries are many so that a job recovered through both faults
	// is not dead-lettered for running out of them.
	direct := connect(t, srv.URL(), runtime.WithNamespace(ns), runtime.DefaultRetries(20))
	task := testtasks.Echo.With(direct)

	led := &ledger{runs: map[string][]int{}}
	logs := &logCount{n: map[string]int{}}
	if os.Getenv("BANANAS_TEST_LOG") == "1" {
		logs.next = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})
	}
	label := rpprof.Labels("bananas-faults", ns)
	var stops []func()
	var clients []*runtime.Client
	rpprof.Do(context.Background(), label, func(context.Context) {
		for range 2 {
			c := connect(t, "redis://"+px.Addr()+"/0"+faultURLOpt, runtime.WithNamespace(ns))
			w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{
				Lease: faultLease, Concurrency: faultConc, Logger: slog.New(logs),
			}))
			runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
				j, _ := runtime.CurrentJob(ctx)
				led.record(j.ID, j.Attempt)
				time.Sleep(3 * time.Millisecond) // the job's work
				return Reply{Text: m.Text}, nil
			})
			stops = append(stops, startWorker(t, w))
			clients = append(clients, c)
		}
	})

	var (
		idsMu sync.Mutex
		ids   []string
	)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		tick := time.NewTicker(faultPace)
		defer tick.Stop()
		for i := range faultJobs {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			id, err := task.Enqueue(ctx, Msg{Text: fmt.Sprint(i)})
			cancel()
			if err != nil {
				t.Errorf("enqueue %d (straight to Redis, no fault there): %v", i, err)
				return
			}
			idsMu.Lock()
			ids = append(ids, id)
			idsMu.Unlock()
			<-tick.C
		}
	}()

	// The producer behind the faults: an enqueue every faultPace until the
	// faults are over, each bounded by faultCall.
	via := connect(t, "redis://"+px.Addr()+"/0"+faultURLOpt, runtime.WithNamespace(ns), runtime.DefaultRetries(20))
	var viaFailed, viaOK int
	var viaLongest time.Duration
	viaStop, viaDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(viaDone)
		tick := time.NewTicker(faultPace)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-viaStop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), faultCall)
			start := time.Now()
			id, err := testtasks.Echo.With(via).Enqueue(ctx, Msg{Text: fmt.Sprint("via ", i)})
			took := time.Since(start)
			cancel()
			viaLongest = max(viaLongest, took)
			if err != nil {
				viaFailed++
				continue
			}
			viaOK++
			idsMu.Lock()
			ids = append(ids, id)
			idsMu.Unlock()
		}
	}()

	waitFor(t, 15*time.Second, "the workers to run their first jobs", func() bool { return led.total() >= 20 })
	goroutinesBefore := labeledGoroutines(t, ns)
	cutAt := time.Since(began)
	px.CutFor(faultCut)
	time.Sleep(faultCut) // the fault itself
	ranBefore := led.total()
	waitFor(t, 15*time.Second, "the workers to run jobs again after the cut", func() bool { return led.total() >= ranBefore+10 })
	hangAt := time.Since(began)
	px.Hang()
	time.Sleep(faultHang) // the fault itself
	px.Resume()
	resumedAt := time.Since(began)
	ranBefore = led.total()
	waitFor(t, 15*time.Second, "the workers to run jobs again after the hang", func() bool { return led.total() >= ranBefore+10 })
	px.Delay(faultLatency)
	ranBefore = led.total()
	time.Sleep(faultSlow) // the fault itself
	px.Delay(0)
	ranSlow := led.total() - ranBefore
	close(viaStop)
	<-viaDone
	recv(t, produced, 30*time.Second, "the producer to enqueue every job")

	// Every job finishes: completed, as seen straight from Redis.
	idsMu.Lock()
	all := slices.Clone(ids)
	idsMu.Unlock()
	ctx := ctxT(t)
	left := map[string]runtime.Status{}
	for _, id := range all {
		left[id] = ""
	}
	deadline := time.Now().Add(faultDrain)
	for len(left) > 0 && time.Now().Before(deadline) {
		for id := range left {
			info, err := direct.Job(ctx, id)
			if err != nil {
				t.Fatalf("Job(%s): %v", id, err)
			}
			if info.Status == runtime.StatusCompleted {
				delete(left, id)
			} else {
				left[id] = info.Status
			}
		}
		if len(left) > 0 {
			time.Sleep(100 * time.Millisecond) // between two reads of the jobs still out, bounded by deadline
		}
	}
	took := time.Since(began)
	goroutinesAfter := labeledGoroutines(t, ns)
	for _, stop := range stops {
		stop()
	}
	for _, c := range clients {
		_ = c.Close()
	}
	waitFor(t, 10*time.Second, "every goroutine of the stopped workers to end", func() bool { return labeledGoroutines(t, ns) == 0 })

	stats, err := runtime.QueueOf(direct).Stats(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	runs, dups, extra := led.figures()
	t.Logf("cut %s at %s, hang %s at %s, resumed at %s, then %s each way for %s (%d runs meanwhile); lease %s, go-redis %s and default retries",
		faultCut, cutAt.Round(time.Millisecond), faultHang, hangAt.Round(time.Millisecond), resumedAt.Round(time.Millisecond),
		faultLatency, faultSlow, ranSlow, faultLease, faultURLOpt)
	t.Logf("producer behind the faults: %d enqueued, %d failed with an error, longest call %s (bound %s); worker goroutines %d before the faults, %d after, 0 once stopped",
		viaOK, viaFailed, viaLongest.Round(time.Millisecond), faultCall, goroutinesBefore, goroutinesAfter)
	t.Logf("worker log: %d outage starts, %d outage ends", logs.containing("cannot fetch from route"), logs.containing("fetching from route again"))
	t.Logf("jobs %d, runs %d, jobs run more than once %d (extra runs %d), recovered %d, dead %d; worker log: %d lease lost, %d recovered, %d results not written; took %s",
		len(all), runs, dups, extra, stats["recovered"], stats["dead"],
		logs.containing("lease lost"),
		logs.containing("recovered a job whose lease expired"),
		logs.containing("result discarded", "result not written"),
		took.Round(time.Millisecond))

	if len(left) > 0 {
		byStatus := map[runtime.Status]int{}
		neverRan := 0
		for id, s := range left {
			byStatus[s]++
			if led.count(id) == 0 {
				neverRan++
			}
		}
		t.Errorf("%d of %d jobs not completed %s after the hang ended (%d of them never ran); by status: %v",
			len(left), len(all), faultDrain, neverRan, byStatus)
		for _, id := range slices.Sorted(maps.Keys(left))[:min(5, len(left))] {
			t.Errorf("job %s: %s, runs %v; in Redis: %s", id, left[id], led.snapshot()[id], whereIs(ctx, direct, id))
		}
	}
	if stats["dead"] != 0 {
		t.Errorf("%d jobs dead-lettered; want none", stats["dead"])
	}
	if viaLongest > faultCall+250*time.Millisecond {
		t.Errorf("an enqueue behind the faults took %s, past its %s context", viaLongest, faultCall)
	}
	// An outage is logged once when it starts and once when it ends, per
	// worker, not once per failed fetch: two faults, two workers.
	if starts, ends := logs.containing("cannot fetch from route"), logs.containing("fetching from route again"); starts > 2*len(stops) || starts != ends {
		t.Errorf("workers logged %d outage starts and %d ends through two faults; want each outage once, and each ended", starts, ends)
	}
	if ranSlow == 0 {
		t.Errorf("no job ran during %s of a slow link", faultSlow)
	}
	// A worker keeps the handler goroutines it started, up to its
	// concurrency; anything beyond those is a leak.
	if goroutinesAfter > goroutinesBefore+2*faultConc {
		t.Errorf("the workers had %d goroutines before the faults and %d after", goroutinesBefore, goroutinesAfter)
	}
	// A second run of a job is only allowed after its lease expired: the
	// recovery counted a failed attempt, so each run of a job has its own
	// attempt number, and there are no more extra runs than recoveries.
	for id, attempts := range led.snapshot() {
		if len(slices.Compact(slices.Sorted(slices.Values(attempts)))) != len(attempts) {
			t.Errorf("job %s ran %d times with attempts %v: run again without its lease having expired", id, len(attempts), attempts)
		}
	}
	if int64(extra) > stats["recovered"] {
		t.Errorf("%d extra runs but only %d jobs recovered after their lease expired", extra, stats["recovered"])
	}
}

// whereIs says which of the route's structures hold job id, to tell a job
// leased to nobody from one whose id left every list.
func whereIs(ctx context.Context, c *runtime.Client, id string) string {
	k, rdb := runtime.QueueOf(c).Keys("default"), c.Redis()
	var out []string
	for _, p := range []runtime.Priority{runtime.PriorityHigh, runtime.PriorityNormal, runtime.PriorityLow} {
		if _, err := rdb.LPos(ctx, k.List(p), id, redis.LPosArgs{}).Result(); err == nil {
			out = append(out, "list "+string(p))
		}
	}
	if tok, err := rdb.HGet(ctx, k.Leases(), id).Result(); err == nil {
		score, err := rdb.ZScore(ctx, k.Active(), tok).Result()
		left, _ := rdb.HGet(ctx, k.Groups(), tok).Result()
		if err != nil {
			out = append(out, fmt.Sprintf("leased to group %s, which is not in the active set (jobs left in it %q)", tok, left))
		} else {
			out = append(out, fmt.Sprintf("leased to group %s, deadline %s ago (jobs left in it %q)", tok, time.Since(time.UnixMilli(int64(score))).Round(time.Millisecond), left))
		}
	}
	if n, _ := rdb.HExists(ctx, k.Payloads(), id).Result(); n {
		out = append(out, "payload")
	}
	if n, _ := rdb.Exists(ctx, k.Job(id)).Result(); n == 1 {
		out = append(out, "job hash")
	}
	for _, z := range []string{k.Scheduled(), k.Dead()} {
		if _, err := rdb.ZScore(ctx, z, id).Result(); err == nil {
			out = append(out, z[strings.LastIndex(z, ":")+1:])
		}
	}
	if len(out) == 0 {
		return "nowhere"
	}
	return strings.Join(out, ", ")
}

// ledger records the attempt number of every run of every job.
type ledger struct {
	mu   sync.Mutex
	runs map[string][]int
	n    int
}

func (l *ledger) record(id string, attempt int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[id] = append(l.runs[id], attempt)
	l.n++
}

func (l *ledger) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *ledger) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs[id])
}

func (l *ledger) snapshot() map[string][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]int, len(l.runs))
	for id, a := range l.runs {
		out[id] = slices.Clone(a)
	}
	return out
}

// figures returns the runs, the jobs run more than once and their extra runs.
func (l *ledger) figures() (runs, dups, extra int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.runs {
		runs += len(a)
		if len(a) > 1 {
			dups++
			extra += len(a) - 1
		}
	}
	return runs, dups, extra
}

// logCount is a slog handler that counts the workers' lines by message, and
// passes them on to next when set.
type logCount struct {
	mu   sync.Mutex
	n    map[string]int
	next slog.Handler
}

func (h *logCount) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *logCount) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.n[r.Message]++
	h.mu.Unlock()
	if h.next != nil {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *logCount) WithAttrs(as []slog.Attr) slog.Handler {
	if h.next == nil {
		return h
	}
	return &logCountWith{h, h.next.WithAttrs(as)}
}

func (h *logCount) WithGroup(g string) slog.Handler {
	if h.next == nil {
		return h
	}
	return &logCountWith{h, h.next.WithGroup(g)}
}

// containing counts the lines whose message holds any of subs.
func (h *logCount) containing(subs ...string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for msg, k := range h.n {
		if slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(msg, sub) }) {
			n += k
		}
	}
	return n
}

// logCountWith counts into its root and passes lines on with its attributes.
type logCountWith struct {
	root *logCount
	next slog.Handler
}

func (h *logCountWith) Enabled(ctx context.Context, l slog.Level) bool {
	return h.root.Enabled(ctx, l)
}

func (h *logCountWith) Handle(ctx context.Context, r slog.Record) error {
	h.root.mu.Lock()
	h.root.n[r.Message]++
	h.root.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h *logCountWith) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCountWith{h.root, h.next.WithAttrs(as)}
}

func (h *logCountWith) WithGroup(g string) slog.Handler {
	return &logCountWith{h.root, h.next.WithGroup(g)}
}

// labeledGoroutines counts the goroutines carrying the pprof label
// bananas-faults=ns: those started under it and every one they started.
func labeledGoroutines(t *testing.T, ns string) int {
	t.Helper()
	var b strings.Builder
	if err := rpprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%q:%q", "bananas-faults", ns)
	n := 0
	for _, group := range strings.Split(b.String(), "\n\n") {
		count, _, ok := strings.Cut(group, " @ ")
		if !ok || !strings.Contains(group, "# labels: ") || !strings.Contains(group, want) {
			continue
		}
		k, err := strconv.Atoi(strings.TrimSpace(count[strings.LastIndex(count, "\n")+1:]))
		if err == nil {
			n += k
		}
	}
	return n
}
