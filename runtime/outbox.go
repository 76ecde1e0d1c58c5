package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/queue"
)

// OutboxTx is a database transaction that EnqueueTx writes jobs into: the
// jobs exist if and only if it commits, and a relay moves them into Redis
// after. Package outbox implements it over a pgx.Tx (outbox.Tx(tx)); the
// runtime knows no database, so it hands the jobs over ready to store.
type OutboxTx interface {
	// InsertOutbox writes jobs, in order, in the transaction. The jobs of
	// one flow (OutboxJob.Flow) must reach Redis in the order they are
	// written.
	InsertOutbox(ctx context.Context, jobs []OutboxJob) error
}

// OutboxJob is one job on its way through an outbox: made by EnqueueTx as
// Enqueue would make it, its id chosen already, and enqueued by a relay
// (Client.RelayOutbox) under that id. An outbox stores it as it is and
// moves bytes, not types: only ID, Task, Route and Flow are for it to read.
type OutboxJob struct {
	ID    string // the job's id, returned by EnqueueTx
	Task  string // the task's wire name
	Route string // the route (or the route's shard) the job goes to
	// Flow is the job's flow, "task|key", for a keyed task (KeyBy, Key):
	// the jobs of one flow are moved in the order they were written. ""
	// for a job of no flow, whose order is free.
	Flow string
	// Data is the rest of the job (envelope, priority, retries, due time,
	// unique key), opaque outside the runtime.
	Data []byte
}

// outboxData is OutboxJob.Data: what queue.NewJob holds besides the id, the
// name and the route. V is the encoding's version; a relay refuses one it
// does not know (the row is kept for a newer program to move).
type outboxData struct {
	V          int    `msgpack:"v"`
	Priority   string `msgpack:"p"`
	Envelope   []byte `msgpack:"e"`
	MaxRetries int    `msgpack:"r"`
	RunAt      int64  `msgpack:"a,omitempty"` // unix ms; 0: ready at once
	UniqueKey  string `msgpack:"u,omitempty"`
	UniqueTTL  int64  `msgpack:"t,omitempty"` // ms
	Keyed      bool   `msgpack:"k,omitempty"`
	Key        string `msgpack:"y,omitempty"`
}

const outboxDataVersion = 1

// EnqueueTx writes one job of the task into tx, an application's database
// transaction (outbox.Tx(tx) for a pgx.Tx), and returns its id at once: the
// job exists if and only if tx commits, and a relay moves it into Redis
// after, under that id. Every enqueue option applies as for Enqueue (route,
// priority, delay or due time, retries, timeout, unique, id, headers,
// result TTL, key) and the client's enqueue hooks run around the write; a
// delay counts from this call, a Unique window from the move into Redis. A
// duplicate (Unique, or WithID of an id another job holds) is found when
// the relay moves the job: the job is then not created, and the id that
// EnqueueTx returned is of no job (the relay logs it).
func (t *Task[A, R]) EnqueueTx(ctx context.Context, tx OutboxTx, args A, opts ...Option) (string, error) {
	ids, err := t.enqueueTx(ctx, tx, []A{args}, opts)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// EnqueueManyTx writes one job per element of args into tx, as EnqueueTx,
// and returns their ids in order. The jobs of one flow reach Redis in the
// order of args.
func (t *Task[A, R]) EnqueueManyTx(ctx context.Context, tx OutboxTx, args []A, opts ...Option) ([]string, error) {
	if len(args) == 0 {
		return []string{}, nil
	}
	return t.enqueueTx(ctx, tx, args, opts)
}

func (t *Task[A, R]) enqueueTx(ctx context.Context, tx OutboxTx, args []A, opts []Option) ([]string, error) {
	if tx == nil {
		return nil, fmt.Errorf("bananas: enqueue %s in a transaction: the transaction is nil (pass outbox.Tx(tx) with the application's pgx.Tx)", t.name)
	}
	c, cfg, now, runAt, err := t.prepare(opts, len(args))
	if err != nil {
		return nil, err
	}
	var ids []string
	e := &Enqueueing{Task: t.name, Route: cfg.route, Count: len(args)}
	err = c.hooked(ctx, e, cfg, func(ctx context.Context, cfg jobConfig) error {
		if len(args) > 1 { // as EnqueueMany: a batch's unkeyed jobs share a shard
			cfg.shard = c.q.ShardOf(ctx, cfg.route, "")
		}
		jobs := make([]OutboxJob, len(args))
		for i, a := range args {
			j, err := t.newJob(c, cfg, a, now, runAt)
			if err != nil {
				return err
			}
			if jobs[i], err = outboxJob(c, cfg, j); err != nil {
				return fmt.Errorf("bananas: enqueue %s in a transaction: %w", t.name, err)
			}
		}
		if err := tx.InsertOutbox(ctx, jobs); err != nil {
			return fmt.Errorf("bananas: enqueue %s in a transaction: %w", t.name, err)
		}
		ids = make([]string, len(jobs))
		for i := range jobs {
			ids[i] = jobs[i].ID
		}
		e.IDs = ids
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// outboxJob is job j, built by newJob, as an outbox stores it.
func outboxJob(c *Client, cfg jobConfig, j queue.NewJob) (OutboxJob, error) {
	d := outboxData{
		V: outboxDataVersion, Priority: string(cfg.priority), Envelope: j.Envelope, MaxRetries: j.MaxRetries,
		UniqueKey: j.UniqueKey, UniqueTTL: j.UniqueTTL.Milliseconds(), Keyed: j.Keyed, Key: j.Key,
	}
	if !j.RunAt.IsZero() {
		d.RunAt = j.RunAt.UnixMilli()
	}
	data, err := msgpack.Marshal(&d)
	if err != nil {
		return OutboxJob{}, err
	}
	o := OutboxJob{ID: j.ID, Task: j.Name, Route: c.shardOf(cfg, &j), Data: data}
	if j.Keyed {
		o.Flow = j.Name + "|" + j.Key
	}
	return o, nil
}

// OutboxMove is what became of one job that RelayOutbox was given.
type OutboxMove struct {
	// Holder is "" when the job is in Redis under its id (written by this
	// call or by an earlier move of it), and otherwise the id of the job
	// that holds its unique key: the job was a duplicate and was not
	// created.
	Holder string
	// Err is set when the job cannot be moved at all (its Data is not one
	// this program reads, its route or id is invalid): the outbox should
	// keep it and report it, as no later attempt of this program moves it.
	Err error
}

// ErrOutboxJob matches an OutboxMove.Err: a job no attempt of this
// program can move.
var ErrOutboxJob = errors.New("bananas: outbox job cannot be moved")

// RelayOutbox enqueues jobs read from an outbox, each under the id
// EnqueueTx chose, and says per job what became of it. It is what a relay
// (package outbox) calls, and is safe to call again with the same jobs: a
// job in Redis already, or finished while its record is kept (ResultTTL),
// is not created twice. Jobs are written in order, consecutive ones of one
// route and priority in one call, so the jobs of a flow keep their order.
// An error from Redis is the error, and no move is returned: some of the
// jobs may be in Redis, and a call again with them all creates none twice.
func (c *Client) RelayOutbox(ctx context.Context, jobs []OutboxJob) ([]OutboxMove, error) {
	moves := make([]OutboxMove, len(jobs))
	now := c.q.Now()
	type run struct {
		route    string
		priority Priority
		at       []int
		jobs     []queue.NewJob
	}
	var cur run
	flush := func() error {
		if len(cur.jobs) == 0 {
			return nil
		}
		holders, err := c.q.Jobs.Enqueue(ctx, cur.route, cur.priority, cur.jobs, now)
		if err != nil {
			return fmt.Errorf("bananas: relay %d outbox jobs to route %s: %w", len(cur.jobs), cur.route, err)
		}
		written := map[string]int{}
		for i, h := range holders {
			switch h {
			case "":
				written[cur.jobs[i].Name]++
			case cur.jobs[i].ID: // moved before: the same job
			default:
				moves[cur.at[i]].Holder = h
			}
		}
		for name, n := range written {
			c.metrics.Enqueued(queue.ShardBase(cur.route), string(cur.priority), name, n)
		}
		cur = run{}
		return nil
	}
	for i, o := range jobs {
		j, prio, err := decodeOutboxJob(o)
		if err != nil {
			moves[i].Err = fmt.Errorf("%w: job %s of task %s: %v", ErrOutboxJob, o.ID, o.Task, err)
			continue
		}
		if o.Route != cur.route || prio != cur.priority || len(cur.jobs) == 1000 {
			if err := flush(); err != nil {
				return nil, err
			}
			cur.route, cur.priority = o.Route, prio
		}
		cur.at = append(cur.at, i)
		cur.jobs = append(cur.jobs, j)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return moves, nil
}

// decodeOutboxJob is the job o carries, checked as Enqueue checks one.
func decodeOutboxJob(o OutboxJob) (queue.NewJob, Priority, error) {
	var d outboxData
	if err := msgpack.Unmarshal(o.Data, &d); err != nil {
		return queue.NewJob{}, "", fmt.Errorf("its data does not decode: %v", err)
	}
	if d.V != outboxDataVersion {
		return queue.NewJob{}, "", fmt.Errorf("its data is of version %d, and this program reads version %d: a newer program wrote it", d.V, outboxDataVersion)
	}
	if !queue.ValidPriority(d.Priority) {
		return queue.NewJob{}, "", fmt.Errorf("invalid priority %q", d.Priority)
	}
	if err := queue.CheckShardRoute(o.Route); err != nil {
		return queue.NewJob{}, "", err
	}
	j := queue.NewJob{
		ID: o.ID, Name: o.Task, Envelope: d.Envelope, MaxRetries: d.MaxRetries,
		UniqueKey: d.UniqueKey, UniqueTTL: time.Duration(d.UniqueTTL) * time.Millisecond,
		Keyed: d.Keyed, Key: d.Key,
		// The id was chosen at EnqueueTx: the script checks it is free, so
		// that a job moved twice (a relay that died before it deleted the
		// row) is created once.
		ChosenID: true,
	}
	if d.RunAt > 0 {
		j.RunAt = time.UnixMilli(d.RunAt)
	}
	if err := queue.CheckChosenID(j.ID, o.Route); err != nil {
		return queue.NewJob{}, "", err
	}
	if j.Name == "" || len(j.Envelope) == 0 || j.MaxRetries < 0 {
		return queue.NewJob{}, "", fmt.Errorf("it has no task name, no envelope or negative retries")
	}
	return j, Priority(d.Priority), nil
}
