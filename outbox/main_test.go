package outbox_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// A program that imports the outbox and sets OUTBOX_URL runs the relay in
// its workers: a job committed in a transaction runs, the schema made by
// the relay itself when the database has none.
func TestMain_WorkersRunTheRelayOfOUTBOX_URL(t *testing.T) {
	t.Parallel()
	pool, url := database(t)
	if _, err := pool.Exec(ctxT(t), "DROP TABLE bananas_outbox; DROP TABLE bananas_outbox_versions; DROP FUNCTION bananas_outbox_notify"); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	ns := redistest.Namespace(t)
	env := map[string]string{"REDIS_URL": srv.URL(), "BANANAS_NAMESPACE": ns, "OUTBOX_URL": url, "LOG_LEVEL": "error"}
	r := newRuns()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runtime.RunCommand(ctx, []string{"worker"}, func(k string) string { return env[k] }, io.Discard, io.Discard,
			func(w *runtime.Worker) { runtime.Handle(w, sendMail, r.handler) })
	}()
	defer func() {
		stop()
		select {
		case code := <-done:
			if code != runtime.ExitOK {
				t.Errorf("worker exited %d", code)
			}
		case <-time.After(30 * time.Second):
			t.Error("the worker did not stop")
		}
	}()
	waitFor(t, 20*time.Second, "the relay to create the schema", func() bool {
		var ok bool
		return pool.QueryRow(ctxT(t), "SELECT to_regclass('bananas_outbox') IS NOT NULL").Scan(&ok) == nil && ok
	})
	c := connect(t, srv.URL())
	commit(t, pool, c, "through-main")
	waitFor(t, 20*time.Second, "the job to run", func() bool { return r.of("through-main") == 1 })
}
