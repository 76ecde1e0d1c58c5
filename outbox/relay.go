package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bananas-go/bananas/runtime"
)

// Relay moves the committed rows of an outbox into Redis, under the ids
// EnqueueTx chose, and deletes them in the same PostgreSQL transaction
// that claimed them. Any number of relays may run on one outbox: each
// claims rows FOR UPDATE SKIP LOCKED, so no row is moved by two at once;
// a row moved twice (a relay that died between Redis and its commit) is
// one job, as the runtime enqueues it under its chosen id. Run by
// runtime.Main's workers when OUTBOX_URL is set, or by a program's own
// loop (NewRelay, Run).
type Relay struct {
	pool     *pgxpool.Pool
	ownsPool bool
	c        *runtime.Client
	o        RelayOptions

	relayed  atomic.Int64
	wake     chan struct{}
	reported sync.Map // id -> struct{}: bad rows logged once
	lastScan time.Time
}

// RelayOptions tune a Relay; the zero value is the defaults.
type RelayOptions struct {
	// Tasks are the tasks whose rows the relay moves: those a worker of the
	// program registers. A row of another task is kept, for a relay of a
	// program that registers it, and reported (logged, and counted by
	// Stats). Nil moves every row.
	Tasks []string
	// Batch is how many rows one transaction moves (default 1000).
	Batch int
	// Concurrency is how many batches the relay moves at once (default
	// 2), each in a transaction of its own.
	Concurrency int
	// Poll is the safety poll: the relay looks for rows this often even
	// when no notification came (default 1s).
	Poll time.Duration
	// Timeout bounds one batch, PostgreSQL and Redis together (default
	// 30s): a server that stops answering costs a batch that long, and its
	// rows are moved again (as the same jobs) once it answers.
	Timeout time.Duration
	// Logger receives the relay's errors and reports (default
	// slog.Default()).
	Logger *slog.Logger
}

// NewRelay returns a relay of the outbox in pool's database that moves jobs
// into c's Redis and namespace, and reports the outbox's backlog to c's
// operator surface (Client.ReportOutbox).
func NewRelay(pool *pgxpool.Pool, c *runtime.Client, o RelayOptions) *Relay {
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 2
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Tasks != nil && len(o.Tasks) == 0 {
		o.Tasks = []string{} // moves nothing, reports everything
	}
	r := &Relay{pool: pool, c: c, o: o, wake: make(chan struct{}, 1)}
	c.ReportOutbox(r) // its backlog in c's metrics, CLI and dashboard
	return r
}

// Relayed is how many rows this relay has moved into Redis (and deleted).
func (r *Relay) Relayed() int64 { return r.relayed.Load() }

// Close closes the relay's pool when the relay opened it (runtime.Main's);
// a pool given to NewRelay is the caller's to close.
func (r *Relay) Close() {
	if r.ownsPool {
		r.pool.Close()
	}
}

// Run migrates the outbox's schema, then moves rows until ctx ends: woken
// by the commits that write rows (LISTEN), and looking every Poll besides.
// PostgreSQL or Redis down stops nothing: the relay retries, backing off
// to 5s, and moves what was committed meanwhile once both answer. It
// returns nil when ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	if !r.retry(ctx, "migrate the outbox's schema", func(ctx context.Context) error { return Migrate(ctx, r.pool) }) {
		return nil
	}
	var wg sync.WaitGroup
	wg.Add(1 + r.o.Concurrency)
	go func() { defer wg.Done(); r.listen(ctx) }()
	for i := range r.o.Concurrency {
		go func() { defer wg.Done(); r.loop(ctx, i == 0) }()
	}
	wg.Wait()
	return nil
}

// loop moves batches until ctx ends, one at a time; the relay runs
// Concurrency of them, so that one batch's PostgreSQL round trips overlap
// another's Redis call. A loop that found a full batch wakes another, and
// one that found the outbox drained waits for a notification or the poll;
// reports says it is the loop that logs the rows of unregistered tasks.
func (r *Relay) loop(ctx context.Context, reports bool) {
	// blocked are flows whose rows a batch left for an earlier row another
	// relay holds: the next claims pass them by, so that a batch full of
	// them does not come back forever. Cleared when the loop waits.
	var blocked []string
	backoff := time.Duration(0)
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		n, err := r.moveBatch(ctx, &blocked)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			backoff = min(max(2*backoff, 50*time.Millisecond), 5*time.Second)
			r.o.Logger.Warn("bananas: outbox relay: a batch failed; its rows stay and are moved again", "err", err, "retry_in", backoff)
			if !sleep(ctx, backoff) {
				return
			}
			continue
		case n == r.o.Batch: // more may wait: another loop may take it too
			backoff = 0
			r.nudge()
			continue
		}
		backoff = 0
		blocked = blocked[:0]
		if reports {
			r.reportUnknown(ctx)
		}
		poll.Reset(r.o.Poll)
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-poll.C:
		}
	}
}

// claim selects the oldest rows no other relay holds, of the relay's tasks.
// Flows in $3 are passed by (see loop's blocked).
const claim = `SELECT seq, id, task, route, coalesce(flow, ''), job FROM bananas_outbox
	WHERE ($1::text[] IS NULL OR task = ANY($1)) AND (flow IS NULL OR flow <> ALL(coalesce($3::text[], '{}')))
	ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED`

// earlier finds, for the flows of a claimed batch, the first row not in it:
// a row another relay holds, or one committed since the claim.
const earlier = `SELECT flow, min(seq) FROM bananas_outbox
	WHERE flow = ANY($1) AND NOT (seq = ANY($2)) GROUP BY flow`

type row struct {
	seq int64
	job runtime.OutboxJob
}

// moveBatch moves one batch in one transaction: claim, enqueue, delete,
// commit. It returns how many rows it claimed. A failure anywhere rolls
// back: the rows stay, and moving them again creates no job twice.
func (r *Relay) moveBatch(ctx context.Context, blocked *[]string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit, a no-op
	rows, err := r.claim(ctx, tx, *blocked)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	claimed := len(rows)
	var passed []string
	if rows, passed, err = inFlowOrder(ctx, tx, rows); err != nil {
		return 0, err
	}
	*blocked = append(*blocked, passed...)
	jobs := make([]runtime.OutboxJob, len(rows))
	for i := range rows {
		jobs[i] = rows[i].job
	}
	moves, err := r.c.RelayOutbox(ctx, jobs)
	if err != nil {
		return 0, err
	}
	done := make([]int64, 0, len(rows))
	for i, m := range moves {
		rw := rows[i]
		switch {
		case m.Err != nil:
			if _, seen := r.reported.LoadOrStore(rw.job.ID, struct{}{}); !seen {
				r.o.Logger.Error("bananas: outbox relay: a row cannot be moved; it stays in the outbox", "id", rw.job.ID, "task", rw.job.Task, "err", m.Err)
			}
			continue
		case m.Holder != "":
			r.o.Logger.Info("bananas: outbox relay: a job was a duplicate and was not created", "id", rw.job.ID, "task", rw.job.Task, "holder", m.Holder)
		}
		done = append(done, rw.seq)
	}
	if len(done) > 0 {
		if _, err := tx.Exec(ctx, "DELETE FROM bananas_outbox WHERE seq = ANY($1)", done); err != nil {
			return 0, fmt.Errorf("outbox: delete %d moved rows: %w", len(done), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("outbox: commit: %w", err)
	}
	r.relayed.Add(int64(len(done)))
	return claimed, nil
}

func (r *Relay) claim(ctx context.Context, tx pgx.Tx, blocked []string) ([]row, error) {
	rs, err := tx.Query(ctx, claim, r.o.Tasks, r.o.Batch, blocked)
	if err != nil {
		return nil, fmt.Errorf("outbox: claim rows: %w", err)
	}
	var out []row
	var rw row
	_, err = pgx.ForEachRow(rs, []any{&rw.seq, &rw.job.ID, &rw.job.Task, &rw.job.Route, &rw.job.Flow, &rw.job.Data}, func() error {
		out = append(out, rw)
		rw = row{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: claim rows: %w", err)
	}
	return out, nil
}

// inFlowOrder drops from rows (in seq order) those of a flow with an
// earlier row outside the batch, held by another relay: that relay moves
// the earlier row, and the later ones wait for a batch after it, so that
// the jobs of a flow reach Redis in the order they were written.
func inFlowOrder(ctx context.Context, tx pgx.Tx, rows []row) (kept []row, blocked []string, err error) {
	var flows []string
	seqs := make([]int64, len(rows))
	seen := map[string]bool{}
	for i, rw := range rows {
		seqs[i] = rw.seq
		if f := rw.job.Flow; f != "" && !seen[f] {
			seen[f] = true
			flows = append(flows, f)
		}
	}
	if len(flows) == 0 {
		return rows, nil, nil
	}
	rs, err := tx.Query(ctx, earlier, flows, seqs)
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: read the order of flows: %w", err)
	}
	first := map[string]int64{}
	var f string
	var s int64
	if _, err := pgx.ForEachRow(rs, []any{&f, &s}, func() error { first[f] = s; return nil }); err != nil {
		return nil, nil, fmt.Errorf("outbox: read the order of flows: %w", err)
	}
	if len(first) == 0 {
		return rows, nil, nil
	}
	kept = rows[:0]
	for _, rw := range rows {
		if s, ok := first[rw.job.Flow]; rw.job.Flow != "" && ok && s < rw.seq {
			if len(blocked) == 0 || blocked[len(blocked)-1] != rw.job.Flow {
				blocked = append(blocked, rw.job.Flow)
			}
			continue
		}
		kept = append(kept, rw)
	}
	return kept, blocked, nil
}

// listen wakes the relay on every notification of Channel, on a
// connection of its own, reconnecting while ctx lasts. After each
// (re)connection it wakes the relay once: rows committed while it was not
// listening sent no notification it heard.
func (r *Relay) listen(ctx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		err := r.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		r.o.Logger.Debug("bananas: outbox relay: listening failed; the safety poll covers it meanwhile", "err", err, "retry_in", backoff)
		if !sleep(ctx, backoff) {
			return
		}
	}
}

func (r *Relay) listenOnce(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	conn, err := pgx.ConnectConfig(cctx, r.pool.Config().ConnConfig.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{Channel}.Sanitize()); err != nil {
		return err
	}
	r.nudge()
	for {
		// A server that went silent (a paused host) holds this wait until
		// it answers again; the safety poll moves rows meanwhile.
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		r.nudge()
	}
}

func (r *Relay) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// retry runs f until it succeeds or ctx ends (false), backing off to 5s.
func (r *Relay) retry(ctx context.Context, what string, f func(context.Context) error) bool {
	backoff := time.Duration(0)
	for {
		cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
		err := f(cctx)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		r.o.Logger.Warn("bananas: outbox relay: cannot "+what+"; retrying", "err", err, "retry_in", backoff)
		if !sleep(ctx, backoff) {
			return false
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
