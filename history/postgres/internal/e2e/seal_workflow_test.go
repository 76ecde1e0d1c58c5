package e2e_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/runtime"
)

// With keys set, the history rows of a workflow's steps — a first step
// whose args carry a secret, a step made of its result — hold no plaintext
// of their args or results in PostgreSQL (every column of every row read
// as text): a step's job is sealed as any job is.
func TestHistory_RowsOfAWorkflowsStepsHoldNoPlaintext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	const secret = "WFCARD-4242-SECRET-19"
	db := pgtest.Shared(t).Database(t)
	store := openHistory(t, ctx, db)
	key := runtime.SealKey{ID: "k1", Secret: bytes.Repeat([]byte{9}, 32)}
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store), runtime.WithKeys(key))
	first := runtime.NewTask[secretArgs, secretResult]("pg_wf_first", runtime.Route("pgwf")).With(c)
	next := runtime.NewTask[secretResult, secretResult]("pg_wf_next", runtime.Route("pgwf")).With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"pgwf"}}))
	runtime.Handle(w, first, func(_ context.Context, a secretArgs) (secretResult, error) {
		return secretResult{Receipt: "paid " + a.Card}, nil
	})
	runtime.Handle(w, next, func(_ context.Context, r secretResult) (secretResult, error) {
		return secretResult{Receipt: "shipped " + r.Receipt}, nil
	})
	startWorker(t, w)
	last := runtime.Then(first.Step(secretArgs{Card: secret}), next)
	id, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := last.Await(ctx, id); err != nil || got.Receipt != "shipped paid "+secret {
		t.Fatalf("Await = %+v, %v", got, err)
	}
	wf, err := c.Workflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "both steps' rows in PostgreSQL", func() bool {
		for _, s := range wf.Steps {
			if rows, _ := store.Job(ctx, s.JobID); len(rows) != 1 {
				return false
			}
		}
		return true
	})

	rows := historyRowsAsText(t, ctx, db)
	for job, text := range rows {
		if strings.Contains(text, secret) {
			t.Errorf("the row of step job %s holds the secret in the clear: %s", job, text)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows read, want 2", len(rows))
	}
}
