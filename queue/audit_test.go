package queue_test

import (
	"context"
	"testing"

	"github.com/bananas-go/bananas/queue"
)

// An audit entry sent twice (its reply lost) is one entry; the log reads
// newest first, a page at a time; a key of another type is refused before
// anything is written.
func TestAudit_AnEntrySentTwiceIsOneAndTheLogReadsNewestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		for i, e := range []string{`{"id":"a"}`, `{"id":"b"}`, `{"id":"b"}`, `{"id":"c"}`} {
			at := int64(1000 + i)
			if e == `{"id":"b"}` {
				at = 1001
			}
			if err := q.AddAudit(ctx, at, []byte(e)); err != nil {
				t.Fatal(err)
			}
		}
		page, err := q.Audit(ctx, 0, 2)
		if err != nil || len(page) != 2 || page[0].Member != `{"id":"c"}` || page[1].Member != `{"id":"b"}` {
			t.Fatalf("first page %v, %v; want c then b", page, err)
		}
		rest, err := q.Audit(ctx, int64(page[1].Score), 10)
		if err != nil || len(rest) != 1 || rest[0].Member != `{"id":"a"}` {
			t.Fatalf("next page %v, %v; want a alone", rest, err)
		}

		key := queue.AuditLog(q.Namespace())
		if err := q.Client().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := q.Client().Set(ctx, key, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := q.AddAudit(ctx, 1, []byte(`{"id":"d"}`)); err == nil {
			t.Fatal("an audit entry was added to a key of another type")
		}
		if v, _ := q.Client().Get(ctx, key).Result(); v != "x" {
			t.Fatalf("the key holds %q after the refusal", v)
		}
	})
}
