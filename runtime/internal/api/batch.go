package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/bananas-go/bananas/runtime/admin"
)

// batchErrorBody is the JSON of a BatchError.
type batchErrorBody struct {
	Error string               `json:"error"`
	Jobs  []admin.BatchRefusal `json:"jobs"`
	IDs   []string             `json:"ids,omitempty"`
}

// batchAnswerBody is the shape of every answer to a batch other than
// success, for the OpenAPI document: a refusal of the batch itself
// (errorBody, naming a field) or a batchErrorBody.
type batchAnswerBody struct {
	Error string `json:"error"`
	// Field is the body key the error is about, when it is about the batch
	// as a whole.
	Field string `json:"field,omitempty"`
	// Jobs lists every job the answer is about, by index.
	Jobs []admin.BatchRefusal `json:"jobs,omitempty"`
	// IDs has one slot per job: its id when it is stored, "" when it is not
	// (500), the id of the job holding a duplicate's unique key (409).
	IDs []string `json:"ids,omitempty"`
}

// submissionKeys are the keys a submission takes, in the order messages name them.
var submissionKeys = []string{"name", "args", "route", "priority", "delay", "unique", "unique_by", "unique_until", "debounce", "expire"}

// submitBatch serves POST /api/v1/jobs/batch: every job is checked, and
// either all are enqueued (201, their ids in order) or none is (400 listing
// every refused job).
func (s *server) submitBatch(w http.ResponseWriter, r *http.Request) error {
	items, err := batchItems(r.Body)
	if err != nil {
		return err
	}
	switch {
	case len(items) == 0:
		return BadRequest("jobs", "jobs: empty: want 1 to %d submissions", admin.MaxBatch)
	case len(items) > admin.MaxBatch:
		return BadRequest("jobs", "jobs: %d submissions, over the limit of %d per batch: send them in several batches", len(items), admin.MaxBatch)
	}
	subs := make([]admin.Submission, len(items))
	var refused []admin.BatchRefusal
	for i, item := range items {
		sub, err := parseSubmission(item)
		if err != nil {
			refused = append(refused, admin.BatchRefusal{Index: i, Field: err.Field, Error: err.Msg})
			continue
		}
		subs[i] = sub
	}
	ids, err := s.a.SubmitBatch(r.Context(), subs, refused)
	var be *admin.BatchError
	switch {
	case errors.As(err, &be):
		if be.Class == admin.Failure {
			s.cfg.Logger.Error("bananas: api batch failed part-way", "path", r.URL.Path, "err", be.Msg)
		}
		return writeJSON(w, be.Class.HTTPStatus(), batchErrorBody{Error: be.Msg, Jobs: be.Jobs, IDs: be.IDs})
	case err != nil:
		return err
	}
	return writeJSON(w, http.StatusCreated, batchCreated{IDs: ids})
}

// batchItems reads the body {"jobs": [...]}, its one key matched exactly,
// and returns the submissions unread. The body is parsed once: the decoder
// reads the object's key as a token and the list straight into its items.
func batchItems(body io.Reader) ([]json.RawMessage, error) {
	dec := json.NewDecoder(body)
	tok, err := dec.Token()
	if err != nil {
		return nil, batchBodyError(err)
	}
	if tok != json.Delim('{') {
		if tok == nil {
			return nil, BadRequest("", `the body is null: want {"jobs": [submission, …]}`)
		}
		return nil, BadRequest("", `the body is not a JSON object: want {"jobs": [submission, …]}`)
	}
	var items []json.RawMessage
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, batchBodyError(err)
		}
		if key, _ := tok.(string); key != "jobs" {
			return nil, BadRequest(key, `unknown field %q (want jobs: {"jobs": [submission, …]})`, key)
		}
		var typ *json.UnmarshalTypeError
		switch err := dec.Decode(&items); {
		case errors.As(err, &typ):
			return nil, BadRequest("jobs", "jobs: want an array of submissions, got %s", typ.Value)
		case err != nil:
			return nil, batchBodyError(err)
		case items == nil:
			return nil, BadRequest("jobs", "jobs: want an array of submissions, got null")
		}
		seen = true
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, batchBodyError(err)
	}
	if !seen {
		return nil, BadRequest("jobs", `jobs: missing: want {"jobs": [submission, …]}`)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, BadRequest("", "the body holds more than one JSON value")
	}
	return items, nil
}

// parseSubmission reads one submission of a batch as POST /api/v1/jobs reads
// its body: keys matched exactly, strings where strings belong, a name.
func parseSubmission(raw json.RawMessage) (admin.Submission, *Error) {
	// A nil field is a key not given.
	var f struct {
		Name, Args, Route, Priority, Delay json.RawMessage
		Unique                             json.RawMessage `json:"unique"`
		UniqueBy                           json.RawMessage `json:"unique_by"`
		UniqueUntil                        json.RawMessage `json:"unique_until"`
		Debounce                           json.RawMessage `json:"debounce"`
		Expire                             json.RawMessage `json:"expire"`
	}
	// Keys all a submission's, as written: a struct decodes them, without
	// the map the general case needs to name a key that is not.
	if !knownKeys(raw) || json.Unmarshal(raw, &f) != nil {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
			return admin.Submission{}, BadRequest("", `want a submission {"name": …, "args": …}, got %s`, clip(raw))
		}
		for k := range fields {
			if !isSubmissionKey(k) {
				return admin.Submission{}, BadRequest(k, "unknown field %q (want %s)", k, strings.Join(submissionKeys, ", "))
			}
		}
		f.Name, f.Args, f.Route, f.Priority, f.Delay = fields["name"], fields["args"], fields["route"], fields["priority"], fields["delay"]
		f.Unique, f.UniqueBy, f.UniqueUntil, f.Debounce = fields["unique"], fields["unique_by"], fields["unique_until"], fields["debounce"]
		f.Expire = fields["expire"]
	}
	sub := admin.Submission{Args: f.Args}
	for _, field := range []struct {
		key string
		raw json.RawMessage
		dst *string
	}{{"name", f.Name, &sub.Name}, {"route", f.Route, &sub.Route}, {"priority", f.Priority, &sub.Priority}, {"delay", f.Delay, &sub.Delay},
		{"unique", f.Unique, &sub.Unique}, {"unique_by", f.UniqueBy, &sub.UniqueBy}, {"unique_until", f.UniqueUntil, &sub.UniqueUntil}, {"debounce", f.Debounce, &sub.Debounce}, {"expire", f.Expire, &sub.Expire}} {
		if field.raw == nil {
			continue
		}
		v, ok := jsonString(field.raw)
		if !ok {
			return admin.Submission{}, BadRequest(field.key, "field %q: want a string, got %s", field.key, clip(field.raw))
		}
		*field.dst = v
	}
	if sub.Name == "" {
		return admin.Submission{}, BadRequest("name", "name: want the task's wire name (GET /api/v1/tasks lists them)")
	}
	return sub, nil
}

func isSubmissionKey(k string) bool {
	for _, want := range submissionKeys {
		if k == want {
			return true
		}
	}
	return false
}

// knownKeys reports whether raw is an object whose every key, as written
// and without escapes, is a submission's. False is no verdict: the general
// case reads raw again and names what is wrong.
func knownKeys(raw []byte) bool {
	depth := 0
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := i + 1
			for end < len(raw) && raw[end] != '"' {
				if raw[end] == '\\' {
					if depth == 1 {
						return false // perhaps a key with an escape
					}
					end++
				}
				end++
			}
			if end >= len(raw) {
				return false
			}
			if depth == 1 {
				j := end + 1
				for j < len(raw) && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\n' || raw[j] == '\r') {
					j++
				}
				if j < len(raw) && raw[j] == ':' && !isSubmissionKey(string(raw[i+1:end])) {
					return false
				}
			}
			i = end
		}
	}
	return len(raw) > 0 && raw[0] == '{'
}

// jsonString is the string raw holds, raw being one well-formed JSON value;
// ok is false when it is not a string. Plain strings (no escapes, valid
// UTF-8) are cut out of raw without a second parse.
func jsonString(raw json.RawMessage) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// batchBodyError names what is wrong with the body of a batch.
func batchBodyError(err error) error {
	e := bodyError(err)
	if be, ok := e.(*Error); ok && strings.HasPrefix(be.Msg, "empty body") {
		be.Msg = `empty body: want {"jobs": [submission, …]}`
	}
	return e
}

// clip is raw JSON for a message, cut short when long.
func clip(raw json.RawMessage) string {
	const most = 64
	if len(raw) > most {
		return fmt.Sprintf("%s… (%d bytes)", raw[:most], len(raw))
	}
	return string(raw)
}
