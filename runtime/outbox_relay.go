package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/bananas-go/bananas/runtime/internal/cli"
)

// OutboxRelay is an outbox's relay as Main runs it (package outbox's
// Relay): Run moves committed jobs into Redis until ctx ends; Close lets
// its connections go.
type OutboxRelay interface {
	Run(ctx context.Context) error
	Close()
}

// OutboxConfig is what Main gives an outbox's package to make the relay of
// OUTBOX_URL.
type OutboxConfig struct {
	URL    string  // OUTBOX_URL
	Client *Client // the jobs go to its Redis and namespace
	// Tasks are the tasks the program's worker registers: the relay moves
	// their jobs, and keeps (and reports) those of any other task.
	Tasks  []string
	Logger *slog.Logger
}

// OutboxOpener makes the relay of an outbox from Main's configuration,
// without reaching the database yet: a worker starts while it is down.
type OutboxOpener func(ctx context.Context, cfg OutboxConfig) (OutboxRelay, error)

var outboxOpener struct {
	sync.Mutex
	open OutboxOpener
}

// RegisterOutbox makes Main run the relay open makes when OUTBOX_URL is
// set: package outbox's init calls it, so that a blank import of the
// package is enough. A second call panics.
func RegisterOutbox(open OutboxOpener) {
	outboxOpener.Lock()
	defer outboxOpener.Unlock()
	if outboxOpener.open != nil {
		panic("bananas: RegisterOutbox called twice")
	}
	outboxOpener.open = open
}

// ErrNoOutbox matches the error of a program started with OUTBOX_URL that
// does not import the outbox's package.
var ErrNoOutbox = errors.New("OUTBOX_URL is set, and the program does not import the outbox: add import _ \"github.com/bananas-go/bananas/outbox\" to its main package")

// openOutbox makes the relay of cfg.URL, nil when it is "". A program that
// does not import the outbox is a usage error naming the import.
func openOutbox(ctx context.Context, cfg OutboxConfig) (OutboxRelay, error) {
	if cfg.URL == "" {
		return nil, nil
	}
	outboxOpener.Lock()
	open := outboxOpener.open
	outboxOpener.Unlock()
	if open == nil {
		return nil, cli.Usage(ErrNoOutbox)
	}
	r, err := open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("OUTBOX_URL: %w", err)
	}
	return r, nil
}

// runWithRelay runs the worker w and, when there is one, the relay r
// beside it until ctx ends; the relay stops with the worker.
func runWithRelay(ctx context.Context, w *Worker, r OutboxRelay, log *slog.Logger) error {
	if r == nil {
		return w.Run(ctx)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(rctx); err != nil && rctx.Err() == nil {
			log.Error("bananas: the outbox relay stopped", "err", err)
		}
	}()
	err := w.Run(ctx)
	stop()
	<-done
	return err
}
