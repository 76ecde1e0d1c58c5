// Command outbox shows the transactional outbox: an order and the job that
// sends its receipt are written in one PostgreSQL transaction, so the
// receipt goes out if and only if the order is committed. One order
// commits, one rolls back; a worker and a relay (what runtime.Main's
// workers run when OUTBOX_URL is set) move the committed job into Redis
// and run it.
//
//	OUTBOX_URL=postgres://user@localhost/app go -C examples/outbox run .
//
// REDIS_URL defaults to the embedded server (mem://). It is a module of
// its own, as package outbox is, so that the core module requires no
// PostgreSQL driver.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bananas-go/bananas/examples/outbox/tasks"
	"github.com/bananas-go/bananas/outbox"
	"github.com/bananas-go/bananas/runtime"
)

func main() {
	pg, redis := os.Getenv("OUTBOX_URL"), os.Getenv("REDIS_URL")
	if pg == "" {
		fmt.Fprintln(os.Stderr, "set OUTBOX_URL to a PostgreSQL database, such as postgres://user@localhost/app")
		os.Exit(2)
	}
	if redis == "" {
		redis = "mem://"
	}
	if err := run(context.Background(), pg, redis, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, pgURL, redisURL string, out io.Writer) error {
	tasks.Out = out
	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := outbox.Migrate(ctx, pool); err != nil { // the relay does it too, when it starts
		return err
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS orders (id bigserial PRIMARY KEY, email text NOT NULL, cents int NOT NULL)`); err != nil {
		return err
	}
	c, err := runtime.Connect(ctx, redisURL)
	if err != nil {
		return err
	}
	defer c.Close()
	runtime.SetDefault(c)

	// The order and its receipt's job, in one transaction.
	place := func(email string, cents int, commit bool) (string, error) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return "", err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var id int64
		if err := tx.QueryRow(ctx, "INSERT INTO orders (email, cents) VALUES ($1, $2) RETURNING id", email, cents).Scan(&id); err != nil {
			return "", err
		}
		job, err := tasks.SendReceipt.EnqueueTx(ctx, outbox.Tx(tx), tasks.Receipt{OrderID: id, Email: email, Cents: cents})
		if err != nil {
			return "", err
		}
		if !commit {
			return job, tx.Rollback(ctx) // the order is gone, and so is its job
		}
		return job, tx.Commit(ctx)
	}
	kept, err := place("ada@example.com", 4200, true)
	if err != nil {
		return err
	}
	lost, err := place("bob@example.com", 999, false)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "committed the order of ada@example.com, rolled back bob@example.com's")

	quiet := slog.New(slog.DiscardHandler)
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"mail"}, Logger: quiet})
	tasks.Register(w)
	relay := outbox.NewRelay(pool, c, outbox.RelayOptions{Tasks: w.Tasks(), Logger: quiet})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = w.Run(wctx); done <- struct{}{} }()
	go func() { _ = relay.Run(wctx); done <- struct{}{} }()
	defer func() { stop(); <-done; <-done }()

	// The committed job is in Redis once the relay moved it; then it runs.
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := c.Job(ctx, kept)
		if err == nil && info.Status == runtime.StatusCompleted {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the committed order's receipt did not go out: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Job(ctx, lost); !errors.Is(err, runtime.ErrJobNotFound) {
		return fmt.Errorf("the rolled-back order's job exists: %v", err)
	}
	fmt.Fprintln(out, "the rolled-back order's job never existed")
	return nil
}
