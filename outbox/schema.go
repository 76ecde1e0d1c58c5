package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// schemaLock is the pg_advisory_xact_lock key that serializes migrations of
// the outbox's schema among every process that migrates one database:
// "bananas_outbox" in 8 bytes of ASCII.
const schemaLock int64 = 0x62616e5f6f757462

// Channel is the LISTEN/NOTIFY channel a commit that wrote rows to the
// outbox notifies (a statement trigger, so a row written by plain SQL
// wakes the relays too); PostgreSQL delivers it when the transaction
// commits, and never for one rolled back.
const Channel = "bananas_outbox"

// migrations are the schema's versions: migrations[i] makes version i+1. A
// version once released never changes; a change of the schema is a new
// entry.
var migrations = []string{
	`CREATE TABLE bananas_outbox (
		seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		id         text        NOT NULL,
		task       text        NOT NULL,
		route      text        NOT NULL,
		flow       text,
		job        bytea       NOT NULL,
		created_at timestamptz NOT NULL DEFAULT clock_timestamp()
	);
	CREATE INDEX bananas_outbox_flow ON bananas_outbox (flow, seq) WHERE flow IS NOT NULL;
	CREATE FUNCTION bananas_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_notify('` + Channel + `', '');
		RETURN NULL;
	END $$;
	CREATE TRIGGER bananas_outbox_notify AFTER INSERT ON bananas_outbox
		FOR EACH STATEMENT EXECUTE FUNCTION bananas_outbox_notify();`,
}

// Beginner is what Migrate runs on: a *pgxpool.Pool, a *pgx.Conn.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Migrate brings the outbox's schema (the table bananas_outbox and
// bananas_outbox_versions, which records the versions applied) to the
// newest version, in one transaction, in the schema db's search_path names
// first. It is idempotent, and safe when several processes migrate one
// database at once: each waits for the schema lock, then applies only the
// versions not recorded yet. A Relay migrates when it starts; a program
// that writes to the outbox before any relay ran calls it itself.
func Migrate(ctx context.Context, db Beginner) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS bananas_outbox_versions (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM bananas_outbox_versions").Scan(&have); err != nil {
			return err
		}
		if have > len(migrations) {
			return fmt.Errorf("the schema is at version %d, newer than this program's %d: upgrade the program", have, len(migrations))
		}
		for v := have + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO bananas_outbox_versions (version) VALUES ($1)", v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("outbox: migrate: %w", err)
	}
	return nil
}
