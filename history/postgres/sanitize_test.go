package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// Rows PostgreSQL would refuse as given — NUL bytes and invalid UTF-8 in
// every text column, \u0000 in args and result, a number jsonb cannot
// hold — written in one batch with good rows: every row is stored, the
// poisoned ones sanitised and saying so, the good ones as given; the same
// batch again stores nothing new, and a later batch is stored too.
func TestWrite_APoisonedRowIsStoredSanitisedWithTheRestOfItsBatch(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var batch []bananastype.Job
	for i := range 10 {
		batch = append(batch, row(fmt.Sprintf("good%02d", i), base.Add(time.Duration(i)*time.Minute)))
	}
	nulErr := row("nul-error", base.Add(time.Second))
	nulErr.Status, nulErr.Error = queue.StatusFailed, "boom\x00after"
	badUTF8 := row("bad-utf8", base.Add(2*time.Second))
	badUTF8.Status, badUTF8.Error = queue.StatusFailed, "caf\xff\xfe"
	nulArgs := row("nul-args", base.Add(3*time.Second))
	nulArgs.Args = json.RawMessage(`{"s":"a\u0000b","k\u0000":1}`)
	nulArgs.ResultJSON = json.RawMessage(`"r\u0000"`)
	everyText := bananastype.Job{ID: "id\x00", Attempts: 1, Name: "t\xc3", Route: "r\x00", Priority: "p\xff", Status: queue.StatusCanceled,
		Error: "\x00", Worker: "w\x80", Args: json.RawMessage("{\"raw\":\"\xff\"}"), CreatedAt: base, FinishedAt: base.Add(4 * time.Second)}
	overflow := row("overflow", base.Add(5*time.Second))
	overflow.Args = json.RawMessage(`{"n":1e1000000}`) // valid JSON, past jsonb's numeric
	notJSON := row("not-json", base.Add(6*time.Second))
	notJSON.ResultJSON = json.RawMessage("{\x00")
	poisoned := []bananastype.Job{nulErr, badUTF8, nulArgs, everyText, overflow, notJSON}
	batch = append(batch, poisoned...)

	write(t, s, batch...)
	if n := count(t, s); n != len(batch) {
		t.Fatalf("%d rows stored; want %d", n, len(batch))
	}
	write(t, s, batch...) // again: each row is the same row
	if n := count(t, s); n != len(batch) {
		t.Fatalf("after a second write, %d rows stored; want %d", n, len(batch))
	}
	one := func(id string) bananastype.Job {
		t.Helper()
		rows, err := s.Job(context.Background(), id)
		if err != nil || len(rows) != 1 {
			t.Fatalf("Job(%q) = %v, %v; want one row", id, rows, err)
		}
		return rows[0]
	}
	for i := range 10 {
		if r := one(fmt.Sprintf("good%02d", i)); r.Sanitized != "" || string(r.Args) != `{"to":"a@b.c"}` {
			t.Fatalf("good row %+v: want it as written, not sanitised", r)
		}
	}
	if r := one("nul-error"); r.Error != "boom␀after" || !strings.Contains(r.Sanitized, "error: NUL") {
		t.Errorf("nul-error: error %q, sanitized %q", r.Error, r.Sanitized)
	}
	if r := one("bad-utf8"); r.Error != "caf\uFFFD" || !strings.Contains(r.Sanitized, "error: invalid UTF-8") {
		t.Errorf("bad-utf8: error %q, sanitized %q", r.Error, r.Sanitized)
	}
	if r := one("nul-args"); !jsonEqual(r.Args, []byte(`{"s":"a␀b","k␀":1}`)) || string(r.ResultJSON) != `"r␀"` ||
		!strings.Contains(r.Sanitized, "args: NUL") || !strings.Contains(r.Sanitized, "result: NUL") {
		t.Errorf("nul-args: args %s result %s, sanitized %q", r.Args, r.ResultJSON, r.Sanitized)
	}
	r := one("id␀")
	if r.Name != "t\uFFFD" || r.Route != "r␀" || r.Priority != "p\uFFFD" || r.Error != "␀" || r.Worker != "w\uFFFD" ||
		string(r.Args) != `{"raw":"`+"\uFFFD"+`"}` {
		t.Errorf("every text column: %+v", r)
	}
	for _, col := range []string{"id:", "task:", "route:", "priority:", "error:", "worker:", "args:"} {
		if !strings.Contains(r.Sanitized, col) {
			t.Errorf("sanitized %q does not name %s", r.Sanitized, col)
		}
	}
	if r := one("overflow"); r.Args != nil || !strings.Contains(r.Sanitized, "PostgreSQL refused the row") || !strings.Contains(r.Sanitized, "22003") {
		t.Errorf("overflow: args %s, sanitized %q; want args left out, saying why", r.Args, r.Sanitized)
	}
	if r := one("not-json"); string(r.ResultJSON) != `"{␀"` || !strings.Contains(r.Sanitized, "result: not JSON") {
		t.Errorf("not-json: result %s, sanitized %q", r.ResultJSON, r.Sanitized)
	}
	write(t, s, row("later", base.Add(time.Hour)))
	if r := one("later"); r.Sanitized != "" {
		t.Fatalf("later row sanitized %q", r.Sanitized)
	}
}

func TestCleanJSON_KeepsWhatJsonbTakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, note string }{
		{`{"a":"b"}`, `{"a":"b"}`, ""},
		{`"\ud83d\ude00"`, `"\ud83d\ude00"`, ""}, // a pair: an emoji
		{`"\\u0000"`, `"\\u0000"`, ""},           // an escaped backslash, then text
		{`"\ud800x"`, `"` + "\uFFFD" + `x"`, "lone surrogates"},
		{`"\u0000"`, `"␀"`, "NUL"},
	} {
		got, note := cleanJSON(json.RawMessage(tc.in))
		if string(got) != tc.want || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
			t.Errorf("cleanJSON(%s) = %s, %q; want %s, a note with %q", tc.in, got, note, tc.want, tc.note)
		}
	}
}
