// Package postgres is the task history's store in PostgreSQL (13 or newer):
// history.Store over one table, bananas_history, partitioned by the UTC day
// a job ended, in the schema the URL's search_path names (public by
// default). Importing it registers the postgres:// and postgresql:// URL
// schemes with package history; a program that does not import it links no
// PostgreSQL driver.
//
// # What it owns, and what it must not know
//
// It owns the schema (Migrate: the table, its indexes, its day partitions
// and the bananas_history_versions table that records which migrations ran),
// writing rows idempotently, the searches and their cursors, and dropping
// old days. It must not know Redis, the worker that feeds it, HTTP or task
// types: rows arrive as bananastype.Job with args and results already JSON.
//
// # Schema
//
//	bananas_history (
//	  id text, life int, attempt int,          -- the job's end: the key with ended_at
//	  task text, route text, priority text,
//	  status text CHECK (status IN ('completed', 'failed', 'canceled', 'expired')),
//	  args jsonb, result jsonb,                -- NULL when none
//	  error text, worker text,                 -- '' when none
//	  enqueued_at timestamptz, started_at timestamptz (NULL: never started),
//	  ended_at timestamptz,
//	  PRIMARY KEY (id, life, attempt, ended_at)
//	) PARTITION BY RANGE (ended_at)
//
// A partition holds one UTC day, bananas_history_pYYYYMMDD. A partitioned
// table's unique keys must hold its partition key, hence ended_at in the
// primary key; a row written twice is the same row, ended_at included, so
// the key still stores it once. Indexes, each on every partition:
//
//   - the primary key: a job's rows (Job), id first;
//   - (task, ended_at DESC), (route, ended_at DESC), (status, ended_at DESC):
//     a search by one of them reads its newest rows first and stops at the
//     page's end;
//   - (ended_at DESC, id DESC, life DESC, attempt DESC): a search by time
//     alone, or by nothing, in the page's order, and the cursor's seek;
//   - GIN (args jsonb_path_ops): an args field's match, as containment
//     (args @> '{"customer":{"id":"42"}}').
//
// Text in the id or the error (ILIKE '%text%') goes through trigram
// indexes where pg_trgm could be created. A search runs in a read-only
// transaction under a statement_timeout (DefaultSearchTimeout, or the URL's
// search_timeout parameter), and one stopped for it is
// history.ErrSearchTimeout: a search that reads too much is refused, to be
// narrowed, rather than left to load the database.
//
// A row is never refused for its content (sanitize): text PostgreSQL
// cannot hold is replaced, and the row's sanitized column says so.
package postgres
