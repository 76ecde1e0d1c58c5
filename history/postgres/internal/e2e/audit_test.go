package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bananas-go/bananas/history/postgres"
	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/runtime"
)

// With a task history in PostgreSQL, an action through the API is a row of
// the audit table too, once, beside the entry Redis keeps.
func TestAudit_AnActionIsOneRowOfThePostgreSQLAuditTable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	store := openHistory(t, ctx, pgtest.Shared(t).Database(t))
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	h := runtime.APIHandler(runtime.NewInspector(c), runtime.APIOptions{})
	r := httptest.NewRequest("POST", "/api/v1/dlq/replay", nil)
	r.Host = "127.0.0.1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("replay: %d %s", w.Code, w.Body)
	}
	rows, err := store.(*postgres.Store).Audit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].What != "replayDeadJobs" || rows[0].Via != "api" || rows[0].Who != "anonymous" || rows[0].Outcome != "ok" {
		t.Fatalf("audit rows %+v; want the one replay", rows)
	}
	status, body := apiGet(t, h, "/api/v1/audit")
	if entries, _ := body["entries"].([]any); status != http.StatusOK || len(entries) != 1 || entries[0].(map[string]any)["id"] != rows[0].ID {
		t.Fatalf("GET /api/v1/audit = %d %v; want the same entry as the row", status, body)
	}
}
