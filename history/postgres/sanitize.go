package postgres

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL refuses some bytes that Go strings and JSON hold: a text
// value may not hold NUL (U+0000) or invalid UTF-8 (22021), and jsonb no
// \u0000 escape (22P05) either. A row holding one would make its whole
// INSERT fail, and the batch be written again and again: one poisoned
// job would stop its route's history. So every row is made storable
// before it is written, and what was changed is said in the row's
// Sanitized note (the column sanitized), which the surfaces show. The
// changes are the same for the same row, so a batch written twice is still
// stored once.

// nulSign stands for a NUL byte in stored text: U+2400 SYMBOL FOR NULL,
// visible where the byte was, which PostgreSQL cannot store.
const nulSign = "\u2400"

// timeMin and timeMax bound a stored time: PostgreSQL's timestamptz ends
// in the year 294276, and a day's partition must be nameable; a job's
// times fall far inside.
var (
	timeMin = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	timeMax = time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)
)

// sanitize is r as PostgreSQL stores it: its text without NUL bytes or
// invalid UTF-8, its args and result as JSON that jsonb takes, its times
// within range; r.Sanitized notes each change.
func sanitize(r bananastype.Job) bananastype.Job {
	var notes []string
	priority := string(r.Priority)
	for _, f := range []struct {
		name string
		s    *string
	}{{"id", &r.ID}, {"task", &r.Name}, {"route", &r.Route}, {"priority", &priority}, {"error", &r.Error}, {"worker", &r.Worker}} {
		if clean, note := cleanText(*f.s); note != "" {
			*f.s = clean
			notes = append(notes, f.name+": "+note)
		}
	}
	for _, f := range []struct {
		name string
		j    *json.RawMessage
	}{{"args", &r.Args}, {"result", &r.ResultJSON}} {
		if clean, note := cleanJSON(*f.j); note != "" {
			*f.j = clean
			notes = append(notes, f.name+": "+note)
		}
	}
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"enqueued_at", &r.CreatedAt}, {"started_at", &r.StartedAt}, {"ended_at", &r.FinishedAt}} {
		if !f.t.IsZero() && (f.t.Before(timeMin) || f.t.After(timeMax)) {
			notes = append(notes, f.name+": "+f.t.UTC().Format(time.RFC3339)+" is out of range, stored as the nearest bound")
			if f.t.Before(timeMin) {
				*f.t = timeMin
			} else {
				*f.t = timeMax
			}
		}
	}
	r.Sanitized = joinNotes(r.Sanitized, notes...)
	r.Priority = queue.Priority(priority)
	return r
}

// cleanText is s without NUL bytes (each one nulSign) or invalid UTF-8
// (each run of bad bytes U+FFFD), and a note of what changed ("" for none).
func cleanText(s string) (string, string) {
	nul := strings.Contains(s, "\x00")
	bad := !utf8.ValidString(s)
	if !nul && !bad {
		return s, ""
	}
	var notes []string
	if bad {
		s = strings.ToValidUTF8(s, "\uFFFD")
		notes = append(notes, "invalid UTF-8 replaced by U+FFFD")
	}
	if nul {
		s = strings.ReplaceAll(s, "\x00", nulSign)
		notes = append(notes, "NUL bytes replaced by U+2400")
	}
	return s, strings.Join(notes, ", ")
}

// cleanJSON is j as jsonb stores it, and a note of what changed ("" for
// none): JSON that is not valid is kept as a JSON string of its text, and
// a valid document's strings (keys too) have their NULs and invalid UTF-8
// replaced as cleanText does.
func cleanJSON(j json.RawMessage) (json.RawMessage, string) {
	if len(j) == 0 {
		return j, ""
	}
	if !json.Valid(j) {
		text, _ := cleanText(string(j))
		s, _ := json.Marshal(text)
		return s, "not JSON, stored as a JSON string of its text"
	}
	badText := !utf8.Valid(j) || loneSurrogate(j)
	if !badText && !bytes.Contains(j, []byte(`\u0000`)) {
		return j, ""
	}
	// Decoding replaces invalid UTF-8 and lone surrogates by U+FFFD.
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		s, _ := json.Marshal(string(j))
		return s, "not JSON, stored as a JSON string of its text"
	}
	nul := false
	v = cleanValue(v, &nul)
	out, err := json.Marshal(v)
	if err != nil {
		s, _ := json.Marshal(string(j))
		return s, "not storable, stored as a JSON string of its text"
	}
	var notes []string
	if badText {
		notes = append(notes, "invalid UTF-8 or lone surrogates replaced by U+FFFD")
	}
	if nul {
		notes = append(notes, "NUL characters replaced by U+2400")
	}
	if notes == nil {
		return j, "" // \u0000 was the text of an escaped backslash
	}
	return out, strings.Join(notes, ", ")
}

// loneSurrogate reports whether j holds a \uD800-\uDFFF escape that is
// not half of a pair, which jsonb refuses (decoding makes it U+FFFD).
func loneSurrogate(j []byte) bool {
	high := func(i int) bool { return surrogate(j, i, "89abAB") }
	low := func(i int) bool { return surrogate(j, i, "cdefCDEF") }
	for i := 0; i+6 <= len(j); i++ {
		switch {
		case j[i] != '\\':
		case high(i) && low(i+6):
			i += 11
		case high(i) || low(i):
			return true
		default:
			i++ // an escape: its next byte is not a backslash that starts one
		}
	}
	return false
}

// surrogate reports whether j[i:] starts with \uD and a third hex digit
// from thirds.
func surrogate(j []byte, i int, thirds string) bool {
	return i+6 <= len(j) && j[i] == '\\' && j[i+1] == 'u' && (j[i+2] == 'd' || j[i+2] == 'D') && strings.IndexByte(thirds, j[i+3]) >= 0
}

// cleanValue is v, a decoded JSON value, with NUL characters in its
// strings and keys replaced by nulSign; changed is set when one was.
func cleanValue(v any, changed *bool) any {
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "\x00") {
			*changed = true
			return strings.ReplaceAll(x, "\x00", nulSign)
		}
	case []any:
		for i := range x {
			x[i] = cleanValue(x[i], changed)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if strings.Contains(k, "\x00") {
				*changed = true
				k = strings.ReplaceAll(k, "\x00", nulSign)
			}
			out[k] = cleanValue(e, changed)
		}
		return out
	}
	return v
}

// bare is r reduced to what PostgreSQL cannot refuse once sanitize has
// run: its key, its task, route, status and times, its error cut to its
// printable start; args and result left out. A row PostgreSQL still
// refuses with a data error after sanitize is stored so, noting why, so
// that the rest of its batch and of its route's history go on.
func bare(r bananastype.Job, why error) bananastype.Job {
	r.Args, r.ResultJSON = nil, nil
	if len(r.Error) > 1000 {
		r.Error = strings.ToValidUTF8(r.Error[:1000], "") + "…"
	}
	r.Sanitized = joinNotes(r.Sanitized, "args and result left out: PostgreSQL refused the row: "+oneLine(why))
	return r
}

func joinNotes(have string, notes ...string) string {
	all := append([]string{}, notes...)
	if have != "" {
		all = append([]string{have}, all...)
	}
	return strings.Join(all, "; ")
}

func oneLine(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg, _ := cleanText(pe.Message)
		return msg + " (SQLSTATE " + pe.Code + ")"
	}
	s, _ := cleanText(err.Error())
	return s
}

// isDataError reports whether err is PostgreSQL refusing a value it was
// given (SQLSTATE class 22, data exception: bad encoding, a number or time
// out of range, JSON it cannot store) or a check of the table (class 23
// but the missing partition, which Write makes): the rows' fault, which
// writing them again does not cure.
func isDataError(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.HasPrefix(pe.Code, "22") || (strings.HasPrefix(pe.Code, "23") && !isNoPartition(err))
}
