package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

type secretArgs struct{ Card string }
type secretResult struct{ Receipt string }

// With keys set, the history rows of a completed and a dead-lettered job
// hold no plaintext of their args, result or error in PostgreSQL (every
// column of every row read as text): they keep the sealed bytes, marked.
// A program with the keys reads them opened (the history search, Job once
// Redis let the job go); one without shows "encrypted".
func TestHistory_RowsOfSealedJobsHoldNoPlaintext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	const secret = "CARD-4111-SECRET-77"
	db := pgtest.Shared(t).Database(t)
	store := openHistory(t, ctx, db)
	key := runtime.SealKey{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)}
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store), runtime.WithKeys(key))
	pay := runtime.NewTask[secretArgs, secretResult]("pg_seal_pay", runtime.Route("pgseal"), runtime.MaxRetries(0), runtime.ResultTTL(time.Millisecond)).With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"pgseal"}}))
	runtime.Handle(w, pay, func(_ context.Context, a secretArgs) (secretResult, error) {
		if strings.HasSuffix(a.Card, "fail") {
			return secretResult{}, errors.New("declined: " + a.Card)
		}
		return secretResult{Receipt: "paid " + a.Card}, nil
	})
	startWorker(t, w)
	okID, err := pay.Enqueue(ctx, secretArgs{Card: secret})
	if err != nil {
		t.Fatal(err)
	}
	badID, err := pay.Enqueue(ctx, secretArgs{Card: secret + " fail"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "both rows in PostgreSQL", func() bool {
		a, _ := store.Job(ctx, okID)
		b, _ := store.Job(ctx, badID)
		return len(a) == 1 && len(b) == 1
	})

	rows := historyRowsAsText(t, ctx, db)
	for id, text := range rows {
		if strings.Contains(text, secret) || strings.Contains(text, "CARD-4111") {
			t.Errorf("the row of %s holds the secret in the clear: %s", id, text)
		}
		if !strings.Contains(text, "bananas_sealed") {
			t.Errorf("the row of %s does not mark its sealed values: %s", id, text)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows read, want 2", len(rows))
	}

	in := runtime.NewInspector(c, func(w *runtime.Worker) { runtime.Handle(w, pay, nil) })
	page, err := in.History(ctx, admin.HistoryQuery{Task: "pg_seal_pay"})
	if err != nil || len(page.Jobs) != 2 {
		t.Fatalf("history search: %d rows, %v", len(page.Jobs), err)
	}
	for _, j := range page.Jobs {
		shown, _ := json.Marshal(j)
		switch j.ID {
		case okID:
			if !strings.Contains(string(j.Args), secret) || !strings.Contains(string(j.ResultJSON), "paid "+secret) {
				t.Errorf("the completed job's row reads %s; want its args and result opened", shown)
			}
		case badID:
			if !strings.Contains(string(j.Args), secret) || j.Error != "declined: "+secret+" fail" {
				t.Errorf("the dead job's row reads %s; want its args and error opened", shown)
			}
		}
	}
	// Redis let the completed job go (its 1 ms result TTL): Job reads the row.
	waitFor(t, 10*time.Second, "the completed job read from the history", func() bool {
		j, err := c.Job(ctx, okID)
		return err == nil && j.FromHistory && strings.Contains(string(j.ResultJSON), "paid "+secret)
	})

	keyless := connect(t, sharedRedisURL(t), runtime.WithNamespace(c.Namespace()), runtime.WithHistory(store), runtime.WithKeys())
	kin := runtime.NewInspector(keyless, func(w *runtime.Worker) { runtime.Handle(w, pay, nil) })
	page, err = kin.History(ctx, admin.HistoryQuery{Task: "pg_seal_pay"})
	if err != nil || len(page.Jobs) != 2 {
		t.Fatalf("history search without keys: %d rows, %v", len(page.Jobs), err)
	}
	for _, j := range page.Jobs {
		if string(j.Args) != `"encrypted"` || (j.ID == okID && string(j.ResultJSON) != `"encrypted"`) || (j.ID == badID && j.Error != "encrypted") {
			shown, _ := json.Marshal(j)
			t.Errorf("without keys the row reads %s; want encrypted values", shown)
		}
	}
}
