package postgres

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/queue"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Search's page sizes: Limit 0 is DefaultLimit, and a larger Limit than
// MaxLimit is MaxLimit.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// order is the searches' order, newest first, and the cursor's key.
const order = " ORDER BY ended_at DESC, id DESC, life DESC, attempt DESC"

// Job returns the rows of the job id, newest first. An id holding bytes
// PostgreSQL cannot store is looked up as Write stores it (sanitize).
func (s *Store) Job(ctx context.Context, id string) ([]bananastype.Job, error) {
	id, _ = cleanText(id)
	out, err := s.read(ctx, "SELECT "+columns+" FROM bananas_history WHERE id = $1"+order, id)
	if err != nil {
		return nil, fmt.Errorf("history/postgres: job %s: %w", id, err)
	}
	return out, nil
}

// read runs a search's query within the search timeout: in a read-only
// transaction whose statement_timeout is the store's, so that the writes
// keep no such bound. A search PostgreSQL stopped for it is
// history.ErrSearchTimeout.
func (s *Store) read(ctx context.Context, sql string, args ...any) ([]bananastype.Job, error) {
	var out []bananastype.Job
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if s.searchTimeout > 0 {
			ms := max(s.searchTimeout.Milliseconds(), 1)
			if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", strconv.FormatInt(ms, 10)); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = collect(rows)
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" && ctx.Err() == nil { // query_canceled, by the timeout
		return nil, fmt.Errorf("%w (after %s)", history.ErrSearchTimeout, s.searchTimeout)
	}
	return out, noSchema(err)
}

// Search returns one page of the rows q selects, newest first by (ended_at,
// id, life, attempt). Its conditions are AND-ed: Task, Route and Status
// equal; Since <= ended_at < Until; Text in the id or the error, ignoring
// case; each Args path's value, as a JSON string and also, when it reads
// as one, as a JSON number or boolean (args @> '{"customer":{"id":"42"}}'
// OR args @> '{"customer":{"id":42}}'). Next is the cursor of the page's
// last row when more rows may follow.
func (s *Store) Search(ctx context.Context, q history.Query) (history.Page, error) {
	sql, args, limit, err := searchSQL(q)
	if err != nil {
		return history.Page{}, err
	}
	out, err := s.read(ctx, sql, args...)
	if isDataError(err) {
		// A value PostgreSQL cannot compare: NUL or invalid UTF-8 in text,
		// which no stored row holds.
		return history.Page{}, fmt.Errorf("history/postgres: search: %w: %s", history.ErrBadQuery, oneLine(err))
	}
	if err != nil {
		return history.Page{}, fmt.Errorf("history/postgres: search: %w", err)
	}
	page := history.Page{Rows: out}
	if len(out) > limit {
		page.Rows = out[:limit]
		page.Next = encodeCursor(page.Rows[limit-1])
	}
	return page, nil
}

// searchSQL is the query of q's page and its parameters; it reads one row
// more than the page's limit, to tell whether another page follows.
func searchSQL(q history.Query) (sql string, args []any, limit int, err error) {
	where, args, err := conditions(q)
	if err != nil {
		return "", nil, 0, err
	}
	limit = q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	sql = "SELECT " + columns + " FROM bananas_history"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	if q.Text != "" || len(q.Args) > 0 {
		// Text and args values are what a search is narrowed by, and are
		// mostly rare: the rows they match are found through their own
		// indexes (trigram, GIN) first and then ordered. Left to itself the
		// planner walks the end-time index in the page's order, filtering
		// as it goes, and reads every row in range when few match (1M
		// rows: 0.5 s against 3-8 ms). The cost moves to values that match
		// many rows: all of them are read before the page is cut.
		sql = "WITH matched AS MATERIALIZED (" + sql + ") SELECT " + columns + " FROM matched"
	}
	return sql + order + " LIMIT " + strconv.Itoa(limit+1), args, limit, nil
}

// conditions are q's WHERE conditions and their parameters.
func conditions(q history.Query) ([]string, []any, error) {
	var where []string
	var args []any
	add := func(cond string, vals ...any) {
		for _, v := range vals {
			args = append(args, v)
			cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1)
		}
		where = append(where, cond)
	}
	if q.Task != "" {
		add("task = ?", q.Task)
	}
	if q.Route != "" {
		add("route = ?", q.Route)
	}
	if q.Status != "" {
		if !q.Status.Finished() {
			return nil, nil, fmt.Errorf("history/postgres: status %q; want completed, failed, canceled or expired", q.Status)
		}
		add("status = ?", string(q.Status))
	}
	if !q.Since.IsZero() {
		add("ended_at >= ?", q.Since.UTC())
	}
	if !q.Until.IsZero() {
		add("ended_at < ?", q.Until.UTC())
	}
	if q.Text != "" {
		pattern := "%" + likeEscaper.Replace(q.Text) + "%"
		add("(id ILIKE ? OR error ILIKE ?)", pattern, pattern)
	}
	for path, value := range q.Args {
		docs, err := containments(path, value)
		if err != nil {
			return nil, nil, err
		}
		cond := strings.TrimSuffix(strings.Repeat("args @> ?::jsonb OR ", len(docs)), " OR ")
		add("("+cond+")", docs...)
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, nil, err
		}
		// ended_at <= ? repeats the row comparison's first column for the
		// planner's partition pruning, which reads no row comparison: a
		// later page opens no partition of a later day.
		add("ended_at <= ? AND (ended_at, id, life, attempt) < (?, ?, ?, ?)", c.EndedAt, c.EndedAt, c.ID, c.Life, c.Attempt)
	}
	return where, args, nil
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// containments are the JSON documents args contains when the field at the
// dotted path has value: value as a JSON string, and as a JSON number or
// boolean too when it reads as one.
func containments(path, value string) ([]any, error) {
	keys := strings.Split(path, ".")
	if slices.Contains(keys, "") {
		return nil, fmt.Errorf("history/postgres: args path %q has an empty field name", path)
	}
	str, _ := json.Marshal(value)
	leaves := []json.RawMessage{str}
	if value == "true" || value == "false" || isJSONNumber(value) {
		leaves = append(leaves, json.RawMessage(value))
	}
	var docs []any
	for _, leaf := range leaves {
		doc := leaf
		for i := len(keys) - 1; i >= 0; i-- {
			next, err := json.Marshal(map[string]json.RawMessage{keys[i]: doc})
			if err != nil {
				return nil, err
			}
			doc = next
		}
		docs = append(docs, string(doc))
	}
	return docs, nil
}

// isJSONNumber reports whether s is a number as JSON writes one.
func isJSONNumber(s string) bool {
	var n json.Number
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	return d.Decode(&n) == nil && n.String() == s && !d.More()
}

// cursor is the key of a page's last row.
type cursor struct {
	EndedAt time.Time `json:"t"`
	ID      string    `json:"i"`
	Life    int       `json:"l"`
	Attempt int       `json:"a"`
}

func encodeCursor(r bananastype.Job) string {
	b, _ := json.Marshal(cursor{EndedAt: r.FinishedAt.UTC(), ID: r.ID, Life: r.Life, Attempt: r.Attempts})
	return base64.RawURLEncoding.EncodeToString(b)
}

var errCursor = fmt.Errorf("history/postgres: %w", history.ErrBadCursor)

func decodeCursor(s string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, errCursor
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var c cursor
	if err := d.Decode(&c); err != nil || c.ID == "" || c.EndedAt.IsZero() {
		return cursor{}, errCursor
	}
	// What a search returned: text PostgreSQL holds, a key's integers, a
	// time a partition holds. Anything else would be an error of the
	// server's, or of the driver's encoding, rather than a refusal.
	if clean, _ := cleanText(c.ID); clean != c.ID || c.Life < 0 || c.Life > math.MaxInt32 || c.Attempt < 0 || c.Attempt > math.MaxInt32 ||
		c.EndedAt.Before(timeMin) || c.EndedAt.After(timeMax.AddDate(0, 0, 1)) {
		return cursor{}, errCursor
	}
	return c, nil
}

// collect reads rows of columns.
func collect(rows pgx.Rows) ([]bananastype.Job, error) {
	out := []bananastype.Job{}
	for rows.Next() {
		var r bananastype.Job
		var priority, status string
		var args, result []byte
		var started *time.Time
		if err := rows.Scan(&r.ID, &r.Life, &r.Attempts, &r.Name, &r.Route, &priority, &status,
			&args, &result, &r.Error, &r.CreatedAt, &started, &r.FinishedAt, &r.Worker, &r.Sanitized); err != nil {
			rows.Close()
			return nil, err
		}
		r.Priority, r.Status = queue.Priority(priority), queue.Status(status)
		r.Args, r.ResultJSON = compact(args), compact(result)
		r.CreatedAt, r.FinishedAt = r.CreatedAt.UTC(), r.FinishedAt.UTC()
		if started != nil {
			r.StartedAt = started.UTC()
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// compact is jsonb's text without the spaces PostgreSQL writes after ':'
// and ',', nil for NULL.
func compact(j []byte) json.RawMessage {
	if j == nil {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, j) != nil {
		return j
	}
	return b.Bytes()
}

// noSchema names what to do when the table does not exist yet; other
// errors pass as they are.
func noSchema(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return fmt.Errorf("the task history has no schema yet: a worker creates it when it starts (HISTORY_MIGRATE=1, the default), or run `app history migrate`: %w", err)
	}
	return err
}
