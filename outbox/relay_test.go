package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/outbox"
	"github.com/bananas-go/bananas/runtime"
)

// runs counts the runs of each job id, by To.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func newRuns() *runs { return &runs{n: map[string]int{}} }

func (r *runs) handler(ctx context.Context, m mail) (runtime.None, error) {
	r.mu.Lock()
	r.n[m.To]++
	r.mu.Unlock()
	return runtime.None{}, nil
}

func (r *runs) of(to string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[to]
}

func (r *runs) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.n)
}

// twice lists the jobs that ran more than once.
func (r *runs) twice() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for to, n := range r.n {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ran %d times", to, n))
		}
	}
	return out
}

// commit writes one job per name in one transaction of its own each.
func commit(t testing.TB, pool *pgxpool.Pool, c *runtime.Client, names ...string) {
	t.Helper()
	ctx := ctxT(t)
	for _, to := range names {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: to})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// everyJobRanOnce waits until every name ran and the outbox is empty (no
// row is left to be moved again), then fails on any name that ran twice.
func everyJobRanOnce(t testing.TB, pool *pgxpool.Pool, r *runs, all []string, within time.Duration) {
	t.Helper()
	waitFor(t, within, fmt.Sprintf("%d jobs to run", len(all)), func() bool { return r.distinct() >= len(all) })
	waitFor(t, within, "an empty outbox", func() bool { return pending(t, pool) == 0 })
	for _, to := range all {
		if r.of(to) == 0 {
			t.Errorf("%s never ran", to)
		}
	}
	if tw := r.twice(); len(tw) > 0 {
		t.Fatalf("jobs ran more than once: %v", tw)
	}
}

// A rolled-back transaction's job never runs; a committed one does, under
// the id EnqueueTx returned, and the relay deletes its row.
func TestRelay_ACommittedJobRunsAndARolledBackOneNever(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)
	r := newRuns()
	startWorker(t, c, func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	relay := startRelay(t, pool, c, outbox.RelayOptions{Tasks: []string{sendMail.Name()}})

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost, err := sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "rolled-back"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var id string
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		id, err = sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "committed"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the committed job to run", func() bool { return r.of("committed") == 1 })
	if job, err := c.Job(ctx, id); err != nil || job.Name != sendMail.Name() {
		t.Fatalf("the committed job %s: %+v, %v; want it in Redis under the id EnqueueTx returned", id, job, err)
	}
	waitFor(t, 10*time.Second, "the moved row deleted", func() bool { return pending(t, pool) == 0 })
	if r.of("rolled-back") != 0 {
		t.Fatal("the rolled-back transaction's job ran")
	}
	if _, err := c.Job(ctx, lost); err == nil {
		t.Fatalf("the rolled-back transaction's job %s exists in Redis", lost)
	}
	if got := relay.Relayed(); got != 1 {
		t.Fatalf("Relayed() = %d, want 1", got)
	}
}

// Every enqueue option that means something before Redis has the job
// reaches it through the outbox: route, priority, delay, id, retries,
// description.
func TestRelay_OptionsReachTheJob(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)
	startRelay(t, pool, c, outbox.RelayOptions{})
	var id string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		id, err = sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "opts"},
			runtime.Route("mail"), runtime.WithPriority(runtime.PriorityHigh), runtime.Delay(time.Hour),
			runtime.WithID("order-42-mail"), runtime.MaxRetries(7), runtime.Description("order 42"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if id != "order-42-mail" {
		t.Fatalf("id %q, want the WithID one", id)
	}
	var job *bananastype.Job
	waitFor(t, 10*time.Second, "the job in Redis", func() bool {
		job, err = c.Job(ctx, id)
		return err == nil
	})
	if job.Route != "mail" || job.Priority != runtime.PriorityHigh || job.Status != runtime.StatusScheduled ||
		job.MaxRetries != 7 || job.Description != "order 42" || job.ScheduledAt.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("job %+v: want route mail, priority high, scheduled an hour on, 7 retries, the description", job)
	}
}

// Two relays (and a third) on one outbox never move a row twice: each row
// is deleted by one relay, and each job runs once.
func TestRelay_TwoRelaysNeverMoveARowTwice(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	r := newRuns()
	all := names("many", 600)
	ctx := ctxT(t)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		args := make([]mail, len(all))
		for i, to := range all {
			args[i] = mail{To: to}
		}
		_, err := sendMail.With(c).EnqueueManyTx(ctx, outbox.Tx(tx), args)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, c, func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	var relays []*outbox.Relay
	for range 3 {
		relays = append(relays, startRelay(t, pool, c, outbox.RelayOptions{Batch: 25}))
	}
	everyJobRanOnce(t, pool, r, all, 30*time.Second)
	var sum int64
	var each []int64
	for _, rl := range relays {
		sum += rl.Relayed()
		each = append(each, rl.Relayed())
	}
	if sum != int64(len(all)) {
		t.Fatalf("the relays moved %v rows, %d in all; want %d in all", each, sum, len(all))
	}
	t.Logf("rows moved by each relay: %v", each)
}

// The rows of one flow (a keyed task's key) reach Redis in the order they
// were written: while another relay holds a flow's first row (here a
// transaction of the test's, holding it as a slow relay would), no relay
// moves the flow's later rows, and other flows pass; once it is let go,
// the flow moves, and one worker slot runs its jobs in their order.
func TestRelay_KeepsTheOrderOfAFlow(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)
	keyed := runtime.NewTask[mail, runtime.None]("outbox_keyed").KeyBy(func(m mail) string { return strings.Split(m.To, "-")[0] })
	const perKey = 30
	var args []mail
	for i := range perKey {
		for _, k := range []string{"a", "b"} {
			args = append(args, mail{To: fmt.Sprintf("%s-%d", k, i), N: i})
		}
	}
	for start := 0; start < len(args); start += 17 { // several transactions
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := keyed.With(c).EnqueueManyTx(ctx, outbox.Tx(tx), args[start:min(start+17, len(args))])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(context.Background()) }()
	if _, err := holder.Exec(ctx, "SELECT 1 FROM bananas_outbox WHERE seq = (SELECT min(seq) FROM bananas_outbox) FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		startRelay(t, pool, c, outbox.RelayOptions{Batch: 4, Poll: 20 * time.Millisecond})
	}
	flowRows := func(k string) int {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM bananas_outbox WHERE flow = $1", keyed.Name()+"|"+k).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, 20*time.Second, "flow b moved past the held row of flow a", func() bool { return flowRows("b") == 0 })
	if n := flowRows("a"); n != perKey {
		t.Fatalf("while its first row was held, %d of flow a's %d rows were moved; want none", perKey-n, perKey)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "an empty outbox", func() bool { return pending(t, pool) == 0 })

	var mu sync.Mutex
	seen := map[string][]int{}
	total := 0
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 1, Logger: quiet()})
	runtime.Handle(w, keyed, func(ctx context.Context, m mail) (runtime.None, error) {
		mu.Lock()
		defer mu.Unlock()
		k := strings.Split(m.To, "-")[0]
		seen[k] = append(seen[k], m.N)
		total++
		return runtime.None{}, nil
	})
	run(t, w.Run)
	waitFor(t, 30*time.Second, "every keyed job to run", func() bool { mu.Lock(); defer mu.Unlock(); return total >= len(args) })
	mu.Lock()
	defer mu.Unlock()
	for k, ns := range seen {
		for i, n := range ns {
			if n != i {
				t.Fatalf("key %s ran in the order %v; want 0..%d", k, ns, perKey-1)
			}
		}
	}
}

// A row of a task that the relay's program does not register is kept, not
// dropped, while the rows of its tasks flow past it.
func TestRelay_KeepsTheRowsOfATaskNoWorkerRegisters(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)
	r := newRuns()
	startWorker(t, c, func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	startRelay(t, pool, c, outbox.RelayOptions{Tasks: []string{sendMail.Name()}})
	var kept string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		kept, err = orphan.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "nobody"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, pool, c, "after-the-orphan")
	waitFor(t, 10*time.Second, "the registered task's job", func() bool { return r.of("after-the-orphan") == 1 })
	waitFor(t, 10*time.Second, "only the orphan row left", func() bool { return pending(t, pool) == 1 })
	var id string
	if err := pool.QueryRow(ctx, "SELECT id FROM bananas_outbox").Scan(&id); err != nil || id != kept {
		t.Fatalf("the row left is %q (%v), want the orphan's %s", id, err, kept)
	}
	if _, err := c.Job(ctx, kept); err == nil {
		t.Fatal("the orphan's job was moved into Redis")
	}
}

// The relay moves jobs into the embedded server (mem://) as into
// redis-server: committed jobs run once, a rolled-back one never.
func TestRelay_IntoTheEmbeddedServer(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, "mem://")
	ctx := ctxT(t)
	r := newRuns()
	startWorker(t, c, func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	startRelay(t, pool, c, outbox.RelayOptions{Tasks: []string{sendMail.Name()}})
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "rolled-back"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	all := names("mem", 50)
	commitMany(t, pool, c, all)
	everyJobRanOnce(t, pool, r, all, 20*time.Second)
	if r.of("rolled-back") != 0 {
		t.Fatal("the rolled-back transaction's job ran")
	}
}

// Unique through the outbox: two committed jobs with identical args within
// the window are one job; the second's row is deleted, not kept, and its
// job never created.
func TestRelay_UniqueKeepsOneOfTwoIdenticalJobs(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)
	var ids []string
	for range 2 {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			id, err := sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "once"}, runtime.Unique(time.Hour))
			ids = append(ids, id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	r := newRuns()
	startWorker(t, c, func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	relay := startRelay(t, pool, c, outbox.RelayOptions{})
	waitFor(t, 10*time.Second, "both rows gone", func() bool { return pending(t, pool) == 0 })
	waitFor(t, 10*time.Second, "the job to run", func() bool { return r.of("once") == 1 })
	if _, err := c.Job(ctx, ids[1]); err == nil {
		t.Fatalf("the duplicate %s was created", ids[1])
	}
	if relay.Relayed() != 2 {
		t.Fatalf("Relayed() = %d, want 2 (the duplicate's row is done with too)", relay.Relayed())
	}
	if r.of("once") != 1 {
		t.Fatalf("the unique job ran %d times", r.of("once"))
	}
}
