// Package outbox is the transactional enqueue: a job written inside the
// application's PostgreSQL transaction exists if and only if the
// transaction commits.
//
//	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
//		if _, err := tx.Exec(ctx, "INSERT INTO orders ..."); err != nil {
//			return err
//		}
//		_, err := tasks.SendEmail.EnqueueTx(ctx, outbox.Tx(tx), args)
//		return err
//	})
//
// EnqueueTx (package runtime) builds the job as Enqueue would, its id
// chosen at once, and Tx writes it as a row of the table bananas_outbox in
// tx. A Relay moves committed rows into Redis under those ids and deletes
// them: runtime.Main's workers run one when OUTBOX_URL is set and the
// program imports this package (a blank import will do); a program of its
// own runs NewRelay(...).Run. A program that does not import it links no
// PostgreSQL driver.
//
// # What it owns, and what it must not know
//
// It owns the outbox's schema (Migrate: the table, its index, the trigger
// that notifies Channel on commit, and bananas_outbox_versions), writing
// rows in the caller's transaction, and the relay: claiming rows FOR UPDATE
// SKIP LOCKED, keeping the order of a flow's rows, deleting what Redis
// holds, and reporting what it cannot move. It must not know task types or
// Redis: a row is a runtime.OutboxJob, bytes the runtime made and the
// runtime enqueues (runtime.Client.RelayOutbox).
//
// # Schema
//
//	bananas_outbox (
//	  seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- write order
//	  id         text NOT NULL,        -- the job's id, returned by EnqueueTx
//	  task       text NOT NULL,
//	  route      text NOT NULL,        -- the route (or shard) it goes to
//	  flow       text,                 -- "task|key" of a keyed task, else NULL
//	  job        bytea NOT NULL,       -- the rest of the job, the runtime's bytes
//	  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
//	)
//
// with an index on (flow, seq) for the flows' order, and a statement
// trigger that notifies Channel, delivered by PostgreSQL on commit only.
//
// # Guarantees
//
// A rolled-back transaction leaves no row, so its job never runs. A
// committed row is moved at least once and created once: the relay
// enqueues it under its chosen id, and the runtime's enqueue of a chosen
// id that Redis holds already (pending, running, or finished with its
// result kept) creates nothing. The row is deleted in the transaction that
// claimed it, after Redis took the job; a relay that dies between the two
// leaves the row, which the next relay moves again, as the same job. Rows
// of one flow are moved in seq order: a relay moves a flow's row only when
// every earlier row of the flow is in its batch or gone.
package outbox
