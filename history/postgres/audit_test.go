package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
)

// An audit entry is one row, however often it is sent, with every field as
// given; text PostgreSQL cannot hold is kept with U+FFFD in its place.
func TestWriteAudit_AnEntrySentTwiceIsOneRowWithEveryField(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 5, 0, 0, 123000, time.UTC)
	e := bananastype.AuditEntry{ID: "a1", When: at, Who: "oncall", Via: "api", What: "pauseRoute", Target: "emails",
		Outcome: "refused", Error: "no such route", Detail: "d"}
	for i := 0; i < 2; i++ {
		if err := s.WriteAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	odd := bananastype.AuditEntry{ID: "a2", When: at.Add(time.Second), Who: "cli@h", Via: "cli", What: "cancelJob", Target: "x\x00y\xff", Outcome: "ok"}
	if err := s.WriteAudit(ctx, odd); err != nil {
		t.Fatal(err)
	}
	got, err := s.Audit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("rows %+v; want two", got)
	}
	if got[0].ID != "a2" || got[0].Target != "x\uFFFDy\uFFFD" {
		t.Errorf("newest row %+v", got[0])
	}
	g := got[1]
	g.When = g.When.UTC()
	if g != e {
		t.Errorf("row %+v, want %+v", g, e)
	}
}
