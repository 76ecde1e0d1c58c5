package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// schemaLock is the pg_advisory_xact_lock key that serializes the changes
// of the schema (migrations, creating and dropping partitions) among every
// process that writes to one database: "bananas_history" in 8 bytes of
// ASCII.
const schemaLock int64 = 0x62616e5f68697374

// migrations are the schema's versions: migrations[i] makes version i+1.
// A version once released never changes; a change of the schema is a new
// entry.
var migrations = []string{
	`CREATE TABLE bananas_history (
		id          text        NOT NULL,
		life        integer     NOT NULL,
		attempt     integer     NOT NULL,
		task        text        NOT NULL,
		route       text        NOT NULL,
		priority    text        NOT NULL,
		status      text        NOT NULL CHECK (status IN ('completed', 'failed', 'canceled')),
		args        jsonb,
		result      jsonb,
		error       text        NOT NULL DEFAULT '',
		enqueued_at timestamptz NOT NULL,
		started_at  timestamptz,
		ended_at    timestamptz NOT NULL,
		worker      text        NOT NULL DEFAULT '',
		PRIMARY KEY (id, life, attempt, ended_at)
	) PARTITION BY RANGE (ended_at);
	CREATE INDEX bananas_history_task ON bananas_history (task, ended_at DESC);
	CREATE INDEX bananas_history_route ON bananas_history (route, ended_at DESC);
	CREATE INDEX bananas_history_status ON bananas_history (status, ended_at DESC);
	CREATE INDEX bananas_history_ended ON bananas_history (ended_at DESC, id DESC, life DESC, attempt DESC);
	CREATE INDEX bananas_history_args ON bananas_history USING gin (args jsonb_path_ops) WITH (gin_pending_list_limit = 512);`,
	// Text in the id or the error (ILIKE '%text%') through trigram indexes;
	// see trigrams: without the pg_trgm extension the version is recorded
	// and such searches read every row in range.
	trigramsMigration,
	// What the store changed to keep a row (sanitize): '' for a row kept
	// as given. A constant default adds the column without rewriting rows.
	`ALTER TABLE bananas_history ADD COLUMN sanitized text NOT NULL DEFAULT ''`,
	// The audit log: one row per action an operator took (audit.go). Not
	// partitioned and not dropped with the history's retention: an audit
	// trail is kept until the operators delete it.
	`CREATE TABLE bananas_audit (
		id      text        PRIMARY KEY,
		at      timestamptz NOT NULL,
		who     text        NOT NULL,
		via     text        NOT NULL,
		what    text        NOT NULL,
		target  text        NOT NULL DEFAULT '',
		outcome text        NOT NULL,
		error   text        NOT NULL DEFAULT '',
		detail  text        NOT NULL DEFAULT ''
	);
	CREATE INDEX bananas_audit_at ON bananas_audit (at DESC);
	CREATE INDEX bananas_audit_who ON bananas_audit (who, at DESC);`,
	// A job that did not start before its expiry ends expired.
	`ALTER TABLE bananas_history DROP CONSTRAINT bananas_history_status_check;
	ALTER TABLE bananas_history ADD CONSTRAINT bananas_history_status_check CHECK (status IN ('completed', 'failed', 'canceled', 'expired'));`,
}

// trigramsMigration is version 2. pg_trgm ships with PostgreSQL (contrib)
// and is a trusted extension, which a database's owner may create; where it
// cannot be created (a role without that right, a server without contrib)
// the version goes without it: searching text still works, by reading the
// rows.
const trigramsMigration = `CREATE EXTENSION IF NOT EXISTS pg_trgm;
	CREATE INDEX bananas_history_error_trgm ON bananas_history USING gin (error gin_trgm_ops) WITH (gin_pending_list_limit = 512);
	CREATE INDEX bananas_history_id_trgm ON bananas_history USING gin (id gin_trgm_ops) WITH (gin_pending_list_limit = 512);`

// Migrate brings the schema to the newest version, in one transaction, and
// makes the partitions of today and tomorrow (UTC). It is idempotent, and
// safe when several processes migrate one database at once: each waits for
// the schema lock, then applies only the versions not recorded yet.
func (s *Store) Migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS bananas_history_versions (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM bananas_history_versions").Scan(&have); err != nil {
			return err
		}
		if have > len(migrations) {
			return fmt.Errorf("the schema is at version %d, newer than this program's %d: upgrade the program", have, len(migrations))
		}
		for v := have + 1; v <= len(migrations); v++ {
			if err := apply(ctx, tx, migrations[v-1]); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO bananas_history_versions (version) VALUES ($1)", v); err != nil {
				return err
			}
		}
		today := day(time.Now())
		return createPartitions(ctx, tx, []time.Time{today, today.AddDate(0, 0, 1)})
	})
	if err != nil {
		return fmt.Errorf("history/postgres: migrate: %w", err)
	}
	return nil
}

// apply runs one version's statements; the trigram version runs in a
// savepoint, and a failure to create pg_trgm leaves it out (see
// trigramsMigration).
func apply(ctx context.Context, tx pgx.Tx, sql string) error {
	if sql != trigramsMigration {
		_, err := tx.Exec(ctx, sql)
		return err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, sql); err != nil {
		return sp.Rollback(ctx)
	}
	return sp.Commit(ctx)
}

// ensurePartitions makes the partitions of days that do not exist yet.
func (s *Store) ensurePartitions(ctx context.Context, days []time.Time) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLock); err != nil {
			return err
		}
		return createPartitions(ctx, tx, days)
	})
}

// createPartitions makes the partitions of days (UTC midnights) that do
// not exist yet; the caller holds the schema lock, so that IF NOT EXISTS
// does not race another process's CREATE.
func createPartitions(ctx context.Context, tx pgx.Tx, days []time.Time) error {
	for _, d := range days {
		sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF bananas_history FOR VALUES FROM ('%s') TO ('%s')",
			partitionName(d), d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("create the partition of %s: %w", d.Format(time.DateOnly), err)
		}
	}
	return nil
}

const partitionPrefix = "bananas_history_p"

func partitionName(d time.Time) string { return partitionPrefix + d.Format("20060102") }

// DropBefore deletes the rows that ended before t: it drops the partitions
// of the days that end at or before t, whole, and deletes the rows before t
// from the day that t falls in. Dropping a partition locks the table for a
// moment (an ACCESS EXCLUSIVE lock, as any DROP of a partition takes).
func (s *Store) DropBefore(ctx context.Context, t time.Time) error {
	t = t.UTC()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLock); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'bananas_history'::regclass`)
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, name := range names {
			d, err := time.Parse("20060102", strings.TrimPrefix(name, partitionPrefix))
			if err != nil || !strings.HasPrefix(name, partitionPrefix) || d.AddDate(0, 0, 1).After(t) {
				continue
			}
			if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, "DELETE FROM bananas_history WHERE ended_at < $1", t)
		return err
	})
	if err != nil {
		return fmt.Errorf("history/postgres: drop before %s: %w", t.Format(time.RFC3339), err)
	}
	return nil
}
