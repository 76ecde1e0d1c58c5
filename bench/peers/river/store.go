package main

import (
	"context"
	"log"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/bananas-go/bananas/internal/benchkit"
)

// store is River's schema on the server: made fresh, measured, emptied.
type store struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	table string // the schema's river_job, quoted
}

// newStore drops and recreates schema and runs River's migrations into it.
func newStore(ctx context.Context, pool *pgxpool.Pool, schema string) *store {
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+q+" CASCADE; CREATE SCHEMA "+q); err != nil {
		log.Fatal(err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		log.Fatal(err)
	}
	return &store{ctx: ctx, pool: pool, table: pgx.Identifier{schema, "river_job"}.Sanitize()}
}

// bytes is river_job's size with its indexes and TOAST.
func (s *store) bytes() int64 {
	var b int64
	if err := s.pool.QueryRow(s.ctx, "SELECT pg_total_relation_size($1::regclass)", s.table).Scan(&b); err != nil {
		log.Fatal(err)
	}
	return b
}

// settleAndTruncate waits until River's batched completer has marked every job
// completed, so that truncating cannot race with it, then empties river_job.
func (s *store) settleAndTruncate() {
	ok := benchkit.WaitFor(func() bool {
		var left int64
		if err := s.pool.QueryRow(s.ctx, "SELECT count(*) FROM "+s.table+" WHERE state <> 'completed'").Scan(&left); err != nil {
			log.Fatal(err)
		}
		return left == 0
	}, 60*time.Second)
	if !ok {
		note("jobs still not completed after 60s")
	}
	if _, err := s.pool.Exec(s.ctx, "TRUNCATE "+s.table); err != nil {
		log.Fatal(err)
	}
}
