package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bananas-go/bananas/runtime"
)

// Tx is the application's transaction tx as the outbox of an enqueue:
//
//	id, err := tasks.SendEmail.EnqueueTx(ctx, outbox.Tx(tx), args)
//
// writes the job's row in tx, so the job exists if and only if tx commits.
// The table is the one tx's search_path finds (Migrate made it), which
// must be the one the relays read.
func Tx(tx pgx.Tx) runtime.OutboxTx { return pgxTx{tx} }

type pgxTx struct{ tx pgx.Tx }

// insertMany keeps the order of the arrays: rows take their seq in the
// order the SELECT yields them, and ORDER BY n makes that the callers'.
const insertMany = `INSERT INTO bananas_outbox (id, task, route, flow, job)
	SELECT id, task, route, nullif(flow, ''), job
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[]) WITH ORDINALITY AS u(id, task, route, flow, job, n)
	ORDER BY n`

func (t pgxTx) InsertOutbox(ctx context.Context, jobs []runtime.OutboxJob) error {
	if t.tx == nil {
		return fmt.Errorf("outbox.Tx: the transaction is nil")
	}
	var err error
	if len(jobs) == 1 {
		j := jobs[0]
		_, err = t.tx.Exec(ctx, "INSERT INTO bananas_outbox (id, task, route, flow, job) VALUES ($1, $2, $3, nullif($4, ''), $5)",
			j.ID, j.Task, j.Route, j.Flow, j.Data)
	} else {
		ids, tasks, routes, flows, data := make([]string, len(jobs)), make([]string, len(jobs)), make([]string, len(jobs)), make([]string, len(jobs)), make([][]byte, len(jobs))
		for i, j := range jobs {
			ids[i], tasks[i], routes[i], flows[i], data[i] = j.ID, j.Task, j.Route, j.Flow, j.Data
		}
		_, err = t.tx.Exec(ctx, insertMany, ids, tasks, routes, flows, data)
	}
	if err != nil {
		return fmt.Errorf("outbox: write %d jobs: %w", len(jobs), err)
	}
	return nil
}
