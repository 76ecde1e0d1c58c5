package outbox_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/outbox"
	"github.com/bananas-go/bananas/runtime"
)

// A job written in a transaction is a row of the outbox if and only if the
// transaction commits, with the id EnqueueTx returned; EnqueueManyTx
// writes its jobs in the order given.
func TestEnqueueTx_TheRowExistsIfAndOnlyIfTheTransactionCommits(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "rolled@back"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pending(t, pool); n != 0 {
		t.Fatalf("after a rollback the outbox holds %d rows, want 0", n)
	}

	var one string
	var many []string
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		if one, err = sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "a"}); err != nil {
			return err
		}
		many, err = sendMail.With(c).EnqueueManyTx(ctx, outbox.Tx(tx), []mail{{N: 1}, {N: 2}, {N: 3}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, "SELECT id, task FROM bananas_outbox ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id, task string
		if err := rows.Scan(&id, &task); err != nil {
			t.Fatal(err)
		}
		if task != sendMail.Name() {
			t.Errorf("row of task %q, want %q", task, sendMail.Name())
		}
		ids = append(ids, id)
	}
	if want := append([]string{one}, many...); !slices.Equal(ids, want) {
		t.Fatalf("outbox rows %v, want %v (EnqueueTx's id, then EnqueueManyTx's in order)", ids, want)
	}
}

// Bad input is refused before anything is written, naming what is wrong.
func TestEnqueueTx_BadInputIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)
	if _, err := sendMail.With(c).EnqueueTx(ctx, nil, mail{}); err == nil {
		t.Fatal("EnqueueTx with a nil transaction succeeded")
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{}, runtime.Route("no spaces")); err == nil {
			t.Error("EnqueueTx with a bad route succeeded")
		}
		if _, err := sendMail.With(c).EnqueueManyTx(ctx, outbox.Tx(tx), []mail{{}, {}}, runtime.WithID("x")); err == nil {
			t.Error("EnqueueManyTx of two jobs with one WithID succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := pending(t, pool); n != 0 {
		t.Fatalf("refused enqueues wrote %d rows", n)
	}
}

// The client's enqueue hooks run around EnqueueTx as around Enqueue, and
// the headers they set travel with the job.
func TestEnqueueTx_HooksRunAndTheirHeadersReachTheJob(t *testing.T) {
	t.Parallel()
	pool, _ := database(t)
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)
	var seen []string
	c.AddEnqueueHook(func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
		e.SetHeader("trace", "t-1")
		err := next(ctx)
		seen = append(seen, e.IDs...)
		return err
	})
	var id string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		id, err = sendMail.With(c).EnqueueTx(ctx, outbox.Tx(tx), mail{To: "h"}, runtime.Header("tenant", "acme"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{id}) {
		t.Fatalf("hook saw ids %v, want [%s]", seen, id)
	}
	got := make(chan map[string]string, 1)
	startWorker(t, c, func(w *runtime.Worker) {
		runtime.Handle(w, sendMail, func(ctx context.Context, m mail) (runtime.None, error) {
			job, _ := runtime.CurrentJob(ctx)
			got <- job.Headers()
			return runtime.None{}, nil
		})
	})
	startRelay(t, pool, c, outbox.RelayOptions{})
	select {
	case h := <-got:
		if h["trace"] != "t-1" || h["tenant"] != "acme" {
			t.Fatalf("job headers %v, want trace=t-1 and tenant=acme", h)
		}
	case <-ctx.Done():
		t.Fatal("the job did not run")
	}
}
