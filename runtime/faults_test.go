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
	r := newFaultRun(t)
	stops, clients := r.startWorkers()
	produced := r.produceDirect()
	r.produceVia()

	waitFor(t, 15*time.Second, "the workers to run their first jobs", func() bool { return r.led.total() >= 20 })
	goroutinesBefore := labeledGoroutines(t, r.ns)
	r.injectFaults()
	close(r.viaStop)
	<-r.viaDone
	recv(t, produced, 30*time.Second, "the producer to enqueue every job")

	// Every job finishes: completed, as seen straight from Redis.
	r.idsMu.Lock()
	all := slices.Clone(r.ids)
	r.idsMu.Unlock()
	ctx := ctxT(t)
	left := r.waitCompleted(ctx, all)
	took := time.Since(r.began)
	goroutinesAfter := labeledGoroutines(t, r.ns)
	for _, stop := range stops {
		stop()
	}
	for _, c := range clients {
		_ = c.Close()
	}
	waitFor(t, 10*time.Second, "every goroutine of the stopped workers to end", func() bool { return labeledGoroutines(t, r.ns) == 0 })

	stats, err := runtime.QueueOf(r.direct).Ops.Stats(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	runs, dups, extra := r.led.figures()
	r.logFaults()
	t.Logf("producer behind the faults: %d enqueued, %d failed with an error, longest call %s (bound %s); worker goroutines %d before the faults, %d after, 0 once stopped",
		r.viaOK, r.viaFailed, r.viaLongest.Round(time.Millisecond), faultCall, goroutinesBefore, goroutinesAfter)
	logs := r.logs
	t.Logf("worker log: %d outage starts, %d outage ends", logs.containing("cannot fetch from route"), logs.containing("fetching from route again"))
	t.Logf("jobs %d, runs %d, jobs run more than once %d (extra runs %d), recovered %d, dead %d; worker log: %d lease lost, %d recovered, %d results not written; took %s",
		len(all), runs, dups, extra, stats["recovered"], stats["dead"],
		logs.containing("lease lost"),
		logs.containing("recovered a job whose lease expired"),
		logs.containing("result discarded", "result not written"),
		took.Round(time.Millisecond))

	r.checkLeft(ctx, left, len(all))
	if stats["dead"] != 0 {
		t.Errorf("%d jobs dead-lettered; want none", stats["dead"])
	}
	if r.viaLongest > faultCall+250*time.Millisecond {
		t.Errorf("an enqueue behind the faults took %s, past its %s context", r.viaLongest, faultCall)
	}
	// An outage is logged once when it starts and once when it ends, per
	// worker, not once per failed fetch: two faults, two workers.
	if starts, ends := logs.containing("cannot fetch from route"), logs.containing("fetching from route again"); starts > 2*len(stops) || starts != ends {
		t.Errorf("workers logged %d outage starts and %d ends through two faults; want each outage once, and each ended", starts, ends)
	}
	if r.ranSlow == 0 {
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
	for id, attempts := range r.led.snapshot() {
		if len(slices.Compact(slices.Sorted(slices.Values(attempts)))) != len(attempts) {
			t.Errorf("job %s ran %d times with attempts %v: run again without its lease having expired", id, len(attempts), attempts)
		}
	}
	if int64(extra) > stats["recovered"] {
		t.Errorf("%d extra runs but only %d jobs recovered after their lease expired", extra, stats["recovered"])
	}
}

// faultRun is the Redis, the proxy in front of it, the producers and what the
// workers ran in TestWorker_EveryJobFinishesThroughCutsAndSilentHangs.
type faultRun struct {
	t      *testing.T
	began  time.Time
	px     *faultproxy.Proxy
	ns     string
	direct *runtime.Client
	task   *runtime.Task[Msg, Reply]
	led    *ledger
	logs   *logCount

	idsMu sync.Mutex
	ids   []string // every job enqueued, straight or behind the faults

	viaFailed, viaOK int
	viaLongest       time.Duration
	viaStop, viaDone chan struct{}
	cutAt, hangAt    time.Duration // since began
	resumedAt        time.Duration
	ranSlow          int // runs during the slow link
}

func newFaultRun(t *testing.T) *faultRun {
	r := &faultRun{t: t, began: time.Now()}
	srv := redistest.Start(t)
	px, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	r.px, r.ns = px, redistest.Namespace(t)
	// Producers and the checks go straight to Redis: the faults are the
	// workers'. Retries are many so that a job recovered through both faults
	// is not dead-lettered for running out of them.
	r.direct = connect(t, srv.URL(), runtime.WithNamespace(r.ns), runtime.DefaultRetries(20))
	r.task = testtasks.Echo.With(r.direct)
	r.led = &ledger{runs: map[string][]int{}}
	r.logs = &logCount{n: map[string]int{}}
	if os.Getenv("BANANAS_TEST_LOG") == "1" {
		r.logs.next = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})
	}
	return r
}

// startWorkers starts two workers behind the proxy, their goroutines
// labeled with the namespace, and returns their stops and clients.
func (r *faultRun) startWorkers() (stops []func(), clients []*runtime.Client) {
	t := r.t
	label := rpprof.Labels("bananas-faults", r.ns)
	rpprof.Do(context.Background(), label, func(context.Context) {
		for range 2 {
			c := connect(t, "redis://"+r.px.Addr()+"/0"+faultURLOpt, runtime.WithNamespace(r.ns))
			w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{
				Lease: faultLease, Concurrency: faultConc, Logger: slog.New(r.logs),
			}))
			runtime.Handle(w, r.task, func(ctx context.Context, m Msg) (Reply, error) {
				j, _ := runtime.CurrentJob(ctx)
				r.led.record(j.ID, j.Attempt)
				time.Sleep(3 * time.Millisecond) // the job's work
				return Reply{Text: m.Text}, nil
			})
			stops = append(stops, startWorker(t, w))
			clients = append(clients, c)
		}
	})
	return stops, clients
}

// produceDirect enqueues faultJobs jobs straight to Redis, one every
// faultPace, and closes the channel it returns when done.
func (r *faultRun) produceDirect() chan struct{} {
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		tick := time.NewTicker(faultPace)
		defer tick.Stop()
		for i := range faultJobs {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			id, err := r.task.Enqueue(ctx, Msg{Text: fmt.Sprint(i)})
			cancel()
			if err != nil {
				r.t.Errorf("enqueue %d (straight to Redis, no fault there): %v", i, err)
				return
			}
			r.idsMu.Lock()
			r.ids = append(r.ids, id)
			r.idsMu.Unlock()
			<-tick.C
		}
	}()
	return produced
}

// produceVia is the producer behind the faults: an enqueue every faultPace
// until viaStop closes, each bounded by faultCall.
func (r *faultRun) produceVia() {
	via := connect(r.t, "redis://"+r.px.Addr()+"/0"+faultURLOpt, runtime.WithNamespace(r.ns), runtime.DefaultRetries(20))
	r.viaStop, r.viaDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.viaDone)
		tick := time.NewTicker(faultPace)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-r.viaStop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), faultCall)
			start := time.Now()
			id, err := testtasks.Echo.With(via).Enqueue(ctx, Msg{Text: fmt.Sprint("via ", i)})
			took := time.Since(start)
			cancel()
			r.viaLongest = max(r.viaLongest, took)
			if err != nil {
				r.viaFailed++
				continue
			}
			r.viaOK++
			r.idsMu.Lock()
			r.ids = append(r.ids, id)
			r.idsMu.Unlock()
		}
	}()
}

// injectFaults cuts every connection, then holds them silent, then slows
// the link, waiting after the first two for the workers to run jobs again.
func (r *faultRun) injectFaults() {
	t, led, px := r.t, r.led, r.px
	r.cutAt = time.Since(r.began)
	px.CutFor(faultCut)
	time.Sleep(faultCut) // the fault itself
	ranBefore := led.total()
	waitFor(t, 15*time.Second, "the workers to run jobs again after the cut", func() bool { return led.total() >= ranBefore+10 })
	r.hangAt = time.Since(r.began)
	px.Hang()
	time.Sleep(faultHang) // the fault itself
	px.Resume()
	r.resumedAt = time.Since(r.began)
	ranBefore = led.total()
	waitFor(t, 15*time.Second, "the workers to run jobs again after the hang", func() bool { return led.total() >= ranBefore+10 })
	px.Delay(faultLatency)
	ranBefore = led.total()
	time.Sleep(faultSlow) // the fault itself
	px.Delay(0)
	r.ranSlow = led.total() - ranBefore
}

// logFaults logs when each fault came and how many jobs ran on the slow link.
func (r *faultRun) logFaults() {
	r.t.Logf("cut %s at %s, hang %s at %s, resumed at %s, then %s each way for %s (%d runs meanwhile); lease %s, go-redis %s and default retries",
		faultCut, r.cutAt.Round(time.Millisecond), faultHang, r.hangAt.Round(time.Millisecond), r.resumedAt.Round(time.Millisecond),
		faultLatency, faultSlow, r.ranSlow, faultLease, faultURLOpt)
}

// waitCompleted waits, up to faultDrain, until every job of all has
// completed, and returns the others with their last status.
func (r *faultRun) waitCompleted(ctx context.Context, all []string) map[string]runtime.Status {
	left := map[string]runtime.Status{}
	for _, id := range all {
		left[id] = ""
	}
	deadline := time.Now().Add(faultDrain)
	for len(left) > 0 && time.Now().Before(deadline) {
		for id := range left {
			info, err := r.direct.Job(ctx, id)
			if err != nil {
				r.t.Fatalf("Job(%s): %v", id, err)
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
	return left
}

// checkLeft fails the test for the jobs left not completed, saying where
// the first few are.
func (r *faultRun) checkLeft(ctx context.Context, left map[string]runtime.Status, all int) {
	if len(left) == 0 {
		return
	}
	byStatus := map[runtime.Status]int{}
	neverRan := 0
	for id, s := range left {
		byStatus[s]++
		if r.led.count(id) == 0 {
			neverRan++
		}
	}
	r.t.Errorf("%d of %d jobs not completed %s after the hang ended (%d of them never ran); by status: %v",
		len(left), all, faultDrain, neverRan, byStatus)
	for _, id := range slices.Sorted(maps.Keys(left))[:min(5, len(left))] {
		r.t.Errorf("job %s: %s, runs %v; in Redis: %s", id, left[id], r.led.snapshot()[id], whereIs(ctx, r.direct, id))
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
