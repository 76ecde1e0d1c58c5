package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

func init() {
	// The schema is the caller's to migrate (history.Migrator): a program
	// migrates at start unless its operators manage the schema themselves.
	// Nor does it wait for the server: a program starts, and runs its jobs,
	// while PostgreSQL is down; the store connects when first used.
	open := func(ctx context.Context, url string) (history.Store, error) { return openLazy(ctx, url) }
	history.Register("postgres", open)
	history.Register("postgresql", open)
}

// Store is the task history in one PostgreSQL database. Safe for concurrent
// use, by several processes too.
type Store struct {
	pool *pgxpool.Pool
	// searchTimeout is the statement_timeout of a search (Search, Job); 0
	// none.
	searchTimeout time.Duration
}

// DefaultSearchTimeout is how long a search may run before PostgreSQL
// stops it (history.ErrSearchTimeout), unless the URL's search_timeout
// parameter says otherwise (a Go duration; 0 for none).
const DefaultSearchTimeout = 5 * time.Second

var _ history.Store = (*Store)(nil)

// Open connects to the database url names (postgres://user@host/db, with
// pgx's parameters: sslmode, search_path, pool_max_conns and the others) and
// checks that it answers. It does not create the schema: Migrate does.
// history.Open of a postgres:// URL does neither: it connects on first use.
func Open(ctx context.Context, url string) (*Store, error) {
	s, err := openLazy(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("history/postgres: connect to %s: %w", s.pool.Config().ConnConfig.Host, err)
	}
	return s, nil
}

// openLazy is Open without the check: the pool connects when first used.
func openLazy(ctx context.Context, rawURL string) (*Store, error) {
	rawURL, timeout, err := searchTimeoutOf(rawURL)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("history/postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("history/postgres: %w", err)
	}
	return &Store{pool: pool, searchTimeout: timeout}, nil
}

// searchTimeoutOf reads the store's own URL parameter, search_timeout, and
// takes it out of the URL: pgx would send it to PostgreSQL as a setting
// of every session, which PostgreSQL does not know.
func searchTimeoutOf(rawURL string) (string, time.Duration, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return rawURL, DefaultSearchTimeout, nil // pgx's to read, or refuse
	}
	q := u.Query()
	v, ok := q["search_timeout"]
	if !ok {
		return rawURL, DefaultSearchTimeout, nil
	}
	d, err := time.ParseDuration(v[0])
	if err != nil || d < 0 {
		return "", 0, fmt.Errorf("history/postgres: search_timeout=%q: want a Go duration such as 5s, or 0 for none", v[0])
	}
	q.Del("search_timeout")
	u.RawQuery = q.Encode()
	return u.String(), d, nil
}

// String names the database as a log may: postgres://user@host:port/db,
// without the password.
func (s *Store) String() string {
	c := s.pool.Config().ConnConfig
	return "postgres://" + c.User + "@" + net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))) + "/" + c.Database
}

// Close closes the store's connections.
func (s *Store) Close() { s.pool.Close() }

// batchRows is how many rows one INSERT carries at most: a batch larger
// than that goes in several, each its own transaction, so that one
// statement's locks and memory stay small.
const batchRows = 1000

// Write stores rows, each once: a row whose key is stored already is left
// as it is (ON CONFLICT DO NOTHING). It creates the day partitions the rows
// need when one is missing. Rows go in key order, so that two writers of
// overlapping batches wait for each other's rows in one order and never
// deadlock.
func (s *Store) Write(ctx context.Context, rows []bananastype.Job) error {
	if len(rows) == 0 {
		return nil
	}
	for i := range rows {
		if err := valid(&rows[i]); err != nil {
			return err
		}
	}
	sorted := make([]bananastype.Job, len(rows))
	for i, r := range rows {
		sorted[i] = sanitize(r)
	}
	slices.SortFunc(sorted, compareKeys)
	for start := 0; start < len(sorted); start += batchRows {
		chunk := sorted[start:min(start+batchRows, len(sorted))]
		if err := s.writeChunk(ctx, chunk); err != nil {
			return fmt.Errorf("history/postgres: write %d rows: %w", len(chunk), err)
		}
	}
	return nil
}

// writeChunk inserts rows in one statement. When PostgreSQL refuses a value
// (a data error, which sanitize's changes should leave none of), it inserts
// them one at a time, and a row refused alone is stored bare: the rest of
// the batch, and the later ends of its route, must not wait on one row.
func (s *Store) writeChunk(ctx context.Context, rows []bananastype.Job) error {
	err := s.insertMaking(ctx, rows)
	if !isDataError(err) {
		return err
	}
	for _, r := range rows {
		err := s.insertMaking(ctx, []bananastype.Job{r})
		if isDataError(err) {
			err = s.insertMaking(ctx, []bananastype.Job{bare(r, err)})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// insertMaking inserts rows, making the day partitions they need when one
// is missing.
func (s *Store) insertMaking(ctx context.Context, rows []bananastype.Job) error {
	err := s.insert(ctx, rows)
	if isNoPartition(err) {
		if err = s.ensurePartitions(ctx, days(rows)); err == nil {
			err = s.insert(ctx, rows)
		}
	}
	return err
}

func valid(r *bananastype.Job) error {
	switch {
	case r.ID == "":
		return errors.New("history/postgres: a row without an id")
	case !r.Status.Finished():
		return fmt.Errorf("history/postgres: row %s has status %q; want completed, failed, canceled or expired", r.ID, r.Status)
	case r.FinishedAt.IsZero():
		return fmt.Errorf("history/postgres: row %s has no end time", r.ID)
	}
	return nil
}

func compareKeys(a, b bananastype.Job) int {
	return cmp.Or(strings.Compare(a.ID, b.ID), cmp.Compare(a.Life, b.Life), cmp.Compare(a.Attempts, b.Attempts), a.FinishedAt.Compare(b.FinishedAt))
}

const columns = "id, life, attempt, task, route, priority, status, args, result, error, enqueued_at, started_at, ended_at, worker, sanitized"

// insert writes rows in one INSERT of unnested arrays, a column each: one
// statement of 14 parameters whatever the number of rows, prepared once
// per connection. Measured for 1,000 rows against a multi-row INSERT and
// against COPY into a temporary table then INSERT ... SELECT, it is the
// fastest both for new rows and for rows stored already
// (docs/HISTORY.md; BenchmarkWrite1000).
func (s *Store) insert(ctx context.Context, rows []bananastype.Job) error {
	var c struct {
		id, task, route, priority, status, error, worker []string
		sanitized                                        []string
		life, attempt                                    []int32
		args, result                                     []*string
		enqueued, ended                                  []time.Time
		started                                          []*time.Time
	}
	for _, r := range rows {
		c.id, c.task, c.route = append(c.id, r.ID), append(c.task, r.Name), append(c.route, r.Route)
		c.priority, c.status = append(c.priority, string(r.Priority)), append(c.status, string(r.Status))
		c.error, c.worker = append(c.error, r.Error), append(c.worker, r.Worker)
		c.life, c.attempt = append(c.life, int32(r.Life)), append(c.attempt, int32(r.Attempts))
		c.args, c.result = append(c.args, jsonText(r.Args)), append(c.result, jsonText(r.ResultJSON))
		c.enqueued, c.ended = append(c.enqueued, r.CreatedAt.UTC()), append(c.ended, r.FinishedAt.UTC())
		c.started = append(c.started, timePtr(r.StartedAt))
		c.sanitized = append(c.sanitized, r.Sanitized)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO bananas_history (`+columns+`)
		SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::jsonb[], $9::jsonb[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[])
		ON CONFLICT DO NOTHING`,
		c.id, c.life, c.attempt, c.task, c.route, c.priority, c.status,
		c.args, c.result, c.error, c.enqueued, c.started, c.ended, c.worker, c.sanitized)
	return err
}

// jsonText is JSON for a jsonb column, nil (SQL NULL) when none.
func jsonText(j []byte) *string {
	if len(j) == 0 || string(j) == "null" {
		return nil
	}
	s := string(j)
	return &s
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// isNoPartition reports whether err is PostgreSQL's "no partition of
// relation found for row": a row of a day with no partition yet.
func isNoPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514" && strings.Contains(pe.Message, "no partition")
}

// days are the UTC days the rows ended on.
func days(rows []bananastype.Job) []time.Time {
	var out []time.Time
	for _, r := range rows {
		d := day(r.FinishedAt)
		if !slices.ContainsFunc(out, d.Equal) {
			out = append(out, d)
		}
	}
	return out
}

func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// Vacuum does at once what autovacuum does in its time: VACUUM ANALYZE of
// the history, which merges the new entries the GIN indexes (args, text)
// keep in pending lists and gives the planner the partitions' statistics.
// Searches right after a bulk of writes are slower until then: a search
// walks every pending entry, and a partition without statistics is read
// whole.
func (s *Store) Vacuum(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE bananas_history"); err != nil {
		return fmt.Errorf("history/postgres: vacuum: %w", err)
	}
	return nil
}
