package bananastest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastest"
	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	bananas "github.com/bananas-go/bananas/runtime"
)

// The assertions read through a client's public listings, so they hold on
// a real redis-server as on the harness's embedded one.
func TestAssertions_ReadAClientOfARealRedisServer(t *testing.T) {
	ctx := context.Background()
	c, err := bananas.Connect(ctx, redistest.Start(t).URL(), bananas.WithNamespace(redistest.Namespace(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	send := tasks.SendEmail.With(c)
	if _, err := send.Enqueue(ctx, tasks.EmailArgs{To: "ana@example.com"}); err != nil {
		t.Fatal(err)
	}
	lost, err := send.Enqueue(ctx, tasks.EmailArgs{To: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	bananastest.RequireEnqueuedN(t, c, tasks.SendEmail, 2, nil)
	bananastest.RequireNotEnqueued(t, c, tasks.CountWords, nil)

	w := bananas.NewWorker(c, bananas.WorkerOptions{
		Routes: []string{"email"}, Backoff: func(int) time.Duration { return 0 },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	awaitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = send.Await(awaitCtx, lost)
	stop()
	if runErr := <-done; runErr != nil {
		t.Fatal(runErr)
	}
	if jobErr := (*bananas.JobError)(nil); !errors.As(err, &jobErr) {
		t.Fatalf("await of the job to nobody: %v, want its failure", err)
	}
	dead := bananastest.RequireDead(t, c, tasks.SendEmail, nil)
	if dead.ID != lost || dead.Args.To != "nobody" || dead.Attempts != 3 {
		t.Fatalf("dead job %+v, want %s after 3 attempts", dead, lost)
	}
	bananastest.RequireNotEnqueued(t, c, tasks.SendEmail, nil)
}
