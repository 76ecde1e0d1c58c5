package outbox_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/internal/proctest"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/outbox"
	"github.com/bananas-go/bananas/runtime"
)

// relayChildEnv, set, makes the test binary a relay process
// (runRelayChild) of "pgURL redisURL namespace".
const relayChildEnv = "BANANAS_OUTBOX_TEST_RELAY"

// runRelayChild runs a relay whose loops stop dead once Redis has taken
// their batch: the first prints "enqueued", and each blocks, its
// transaction open and its rows not deleted, to be SIGKILLed there.
func runRelayChild() {
	f := strings.Fields(os.Getenv(relayChildEnv))
	ctx := context.Background()
	c, err := runtime.Connect(ctx, f[1], runtime.WithNamespace(f[2]))
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(1)
	}
	c.Redis().AddHook(stopAfterBatch{})
	pool, err := pgxpool.New(ctx, f[0])
	if err != nil {
		fmt.Println("pool:", err)
		os.Exit(1)
	}
	_ = outbox.NewRelay(pool, c, outbox.RelayOptions{Batch: 50, Logger: quiet()}).Run(ctx)
}

// stopAfterBatch blocks each caller after a script call that carries a
// batch of jobs (the enqueue of a relay loop's batch).
type stopAfterBatch struct{}

var saidEnqueued sync.Once

func (stopAfterBatch) DialHook(next redis.DialHook) redis.DialHook { return next }
func (stopAfterBatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (stopAfterBatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); err == nil && (name == "evalsha" || name == "eval") && len(cmd.Args()) > 100 {
			saidEnqueued.Do(func() { fmt.Println("enqueued") })
			select {} // killed here
		}
		return err
	}
}

// A relay SIGKILLed after Redis took its batch and before its commit
// leaves the batch's rows in the outbox; the next relay moves them again,
// and every committed job runs exactly once.
func TestRelay_KilledMidBatchEveryJobRunsOnce(t *testing.T) {
	t.Parallel()
	pool, url := database(t)
	srv := redistest.Start(t)
	ns := redistest.Namespace(t)
	c, err := runtime.Connect(ctxT(t), srv.URL(), runtime.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	all := names("killed", 200)
	commitMany(t, pool, c, all)

	relay := proctest.Start(t, relayChildEnv+"="+url+" "+srv.URL()+" "+ns)
	relay.Await(t, "enqueued", 30*time.Second)
	relay.Kill(t)
	inRedis := 0
	for _, id := range idsOf(t, pool) {
		if _, err := c.Job(ctxT(t), id); err == nil {
			inRedis++
		}
	}
	// Each of the relay's loops (Concurrency) stops after its own batch.
	if n := pending(t, pool); n != len(all) || inRedis < 50 || inRedis%50 != 0 {
		t.Fatalf("after the kill: %d rows in the outbox, %d of their jobs in Redis; want all %d rows, and the killed batches' jobs (50 each)", n, inRedis, len(all))
	}

	r := newRuns()
	startWorker(t, c, func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	startRelay(t, pool, c, outbox.RelayOptions{Batch: 50})
	everyJobRanOnce(t, pool, r, all, 30*time.Second)
}

// outage is how long Redis or PostgreSQL stays down in the tests below:
// long enough that the relay's calls time out and are retried many times
// over, and a batch claimed before it is held the whole while.
const outage = 10 * time.Second

// Redis down for a while: the rows committed meanwhile wait in the outbox,
// and once it is back every committed job runs exactly once.
func TestRelay_RedisDownForAWhileEveryJobRunsOnce(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	srv := redistest.StartPersistent(t)
	c := connect(t, srv.URL())
	r := newRuns()
	startWorker(t, c, func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	startRelay(t, pool, c, outbox.RelayOptions{Batch: 20, Poll: 50 * time.Millisecond})
	before := names("before", 50)
	ids := commitMany(t, pool, c, before)
	everyJobRanOnce(t, pool, r, before, 30*time.Second)
	// A run is counted before its worker acknowledges it; one whose
	// acknowledgement the outage cut runs again, as it must. The outage
	// comes once every job before it is acknowledged.
	waitFor(t, 30*time.Second, "the jobs before the outage acknowledged", func() bool {
		for _, id := range ids {
			if j, err := c.Job(ctxT(t), id); err != nil || j.Status != runtime.StatusCompleted {
				return false
			}
		}
		return true
	})

	srv.Stop()
	during := names("during", 100)
	commitMany(t, pool, c, during)
	time.Sleep(outage) // the outage's length, not a wait for anything
	if n := pending(t, pool); n != len(during) {
		t.Fatalf("while Redis was down the outbox held %d rows, want %d", n, len(during))
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	everyJobRanOnce(t, pool, r, append(before, during...), 60*time.Second)
}

// PostgreSQL stopped (as by a crash) while the relay moves a batch, and
// started again: every committed job runs exactly once.
func TestRelay_PostgreSQLDownForAWhileEveryJobRunsOnce(t *testing.T) {
	t.Parallel()
	pg, pool, r, all := relayUnderWay(t, "pg", 2*time.Second)
	pg.Stop()
	time.Sleep(outage) // the outage's length, not a wait for anything
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	everyJobRanOnce(t, pool, r, all, 60*time.Second)
}

// PostgreSQL paused (SIGSTOP: connections open, nothing answering) while
// the relay moves a batch, then continued: every committed job runs exactly
// once.
func TestRelay_PostgreSQLPausedForAWhileEveryJobRunsOnce(t *testing.T) {
	t.Parallel()
	pg, pool, r, all := relayUnderWay(t, "paused", time.Second)
	pg.Pause()
	time.Sleep(outage) // the pause's length, not a wait for anything
	pg.Continue()
	everyJobRanOnce(t, pool, r, all, 60*time.Second)
}

// relayUnderWay starts a PostgreSQL server of the test's own, for it to
// stop or pause, commits 400 jobs (names(prefix, 400)) in its outbox, starts a
// worker and a relay (Timeout timeout) into a redis-server of the test's
// own, and returns once the first of the jobs has run.
func relayUnderWay(t *testing.T, prefix string, timeout time.Duration) (*pgtest.Server, *pgxpool.Pool, *runs, []string) {
	t.Helper()
	pg := pgtest.Start(t)
	pool := migrated(t, pg.Database(t))
	c := connect(t, redistest.Start(t).URL())
	all := names(prefix, 400)
	commitMany(t, pool, c, all)
	r := newRuns()
	startWorker(t, c, func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	startRelay(t, pool, c, outbox.RelayOptions{Batch: 10, Timeout: timeout})
	waitFor(t, 20*time.Second, "the relay under way", func() bool { return r.distinct() > 0 })
	return pg, pool, r, all
}

// commitMany writes one job per name in one transaction, and returns
// their ids.
func commitMany(t testing.TB, pool *pgxpool.Pool, c *runtime.Client, all []string) []string {
	t.Helper()
	ctx := ctxT(t)
	args := make([]mail, len(all))
	for i, to := range all {
		args[i] = mail{To: to}
	}
	var ids []string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		ids, err = sendMail.With(c).EnqueueManyTx(ctx, outbox.Tx(tx), args)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// idsOf lists the job ids of the outbox's rows.
func idsOf(t testing.TB, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(ctxT(t), "SELECT id FROM bananas_outbox ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
