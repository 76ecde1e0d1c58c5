package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
)

// The store keeps the audit log too (history.AuditWriter).
var _ history.AuditWriter = (*Store)(nil)

// WriteAudit stores one audit entry in bananas_audit; an entry whose id is
// stored already is left as it is, so an entry sent twice is one row. Text
// PostgreSQL cannot hold (a NUL byte, bytes that are not UTF-8, which an
// odd path may put in a target) is stored with U+FFFD in their place.
func (s *Store) WriteAudit(ctx context.Context, e bananastype.AuditEntry) error {
	clean := func(v string) string {
		return strings.ReplaceAll(strings.ToValidUTF8(v, "\uFFFD"), "\x00", "\uFFFD")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO bananas_audit (id, at, who, via, what, target, outcome, error, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
		clean(e.ID), e.When, clean(e.Who), clean(e.Via), clean(e.What), clean(e.Target), clean(e.Outcome), clean(e.Error), clean(e.Detail))
	if err != nil {
		return fmt.Errorf("history/postgres: write audit entry %s: %w", e.ID, err)
	}
	return nil
}

// Audit reads up to limit audit entries, newest first: the rows the
// audit log keeps in PostgreSQL, past the most recent ones Redis keeps.
func (s *Store) Audit(ctx context.Context, limit int) ([]bananastype.AuditEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, at, who, via, what, target, outcome, error, detail
		FROM bananas_audit ORDER BY at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("history/postgres: read the audit log: %w", err)
	}
	defer rows.Close()
	var out []bananastype.AuditEntry
	for rows.Next() {
		var e bananastype.AuditEntry
		if err := rows.Scan(&e.ID, &e.When, &e.Who, &e.Via, &e.What, &e.Target, &e.Outcome, &e.Error, &e.Detail); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
