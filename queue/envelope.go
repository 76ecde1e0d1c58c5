package queue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/mpack"
)

// UnknownTask is the task name of a job whose own name could not be read
// (garbage in Redis): bn_materialize and bn_stub in scripts/_prelude.lua
// write it.
const UnknownTask = "?"

// Envelope is the immutable part of a job, stored msgpack-encoded in the
// fields e0, e1, ... of its hash (60-byte slices, so the hash stays compact). What the Lua scripts must read (name, priority, max
// retries, attempts, state) lives in fields of its own, so no script decodes it.
type Envelope struct {
	Args        []byte `msgpack:"a"`           // msgpack-encoded task arguments
	Timeout     int64  `msgpack:"t,omitempty"` // ms; 0 takes the worker's default
	ResultTTL   int64  `msgpack:"r,omitempty"` // ms the success record is kept; 0 = default; KeepNothing = none
	FailureTTL  int64  `msgpack:"f,omitempty"` // ms the failure record is kept; 0 = default
	Description string `msgpack:"d,omitempty"` // free text shown by `job` and the dashboard
	Backoff     int64  `msgpack:"b,omitempty"` // ms: the first retry's delay, doubling after; 0 = the worker's Backoff
	// Workflow is the id of the workflow the job is a step of, Step that
	// step's index in it (workflow.go); "" for a job of no workflow.
	Workflow string `msgpack:"w,omitempty"`
	Step     int    `msgpack:"s,omitempty"`
	// Headers are the job's string headers (CheckHeaders bounds them): a
	// trace context, a tenant, what middleware on either side passes along
	// beside the args. Written in key order.
	Headers map[string]string `msgpack:"h,omitempty"`
}

// KeepNothing, as an Envelope's ResultTTL, says that the job's success keeps
// no record at all (result_ttl=0, runtime.ResultTTL(0)): the ack announces
// the end and hands it to the ended list (the task history) but stores
// nothing, so the job is gone from Redis once it completed. A failure is
// kept as any other (FailureTTL). It is negative so that a worker which
// does not know it reads it as "no TTL set" and keeps the record for its
// default: a mixed deployment keeps a record too many, never one too few.
const KeepNothing int64 = -1

// EncodeEnvelope encodes e for storage: a msgpack map with the struct's tags
// as keys, omitting empty fields, as msgpack.Marshal(&e) would but with
// integers in their smallest form (Marshal writes every int64 in 9 bytes).
// Written by hand because every enqueue pays for it; msgpack.Unmarshal reads it.
func EncodeEnvelope(e Envelope) ([]byte, error) {
	n := 1
	for _, set := range []bool{e.Timeout != 0, e.ResultTTL != 0, e.FailureTTL != 0, e.Description != "", e.Backoff != 0, e.Workflow != "", e.Step != 0, len(e.Headers) > 0} {
		if set {
			n++
		}
	}
	b := make([]byte, 0, len(e.Args)+len(e.Description)+48)
	b = mpack.MapHeader(b, n)
	b = mpack.String(b, "a")
	b = mpack.Bytes(b, e.Args)
	for _, f := range [...]struct {
		key string
		v   int64
	}{{"t", e.Timeout}, {"r", e.ResultTTL}, {"f", e.FailureTTL}, {"b", e.Backoff}} {
		if f.v != 0 {
			b = mpack.String(b, f.key)
			b = mpack.Int(b, f.v)
		}
	}
	if e.Description != "" {
		b = mpack.String(b, "d")
		b = mpack.String(b, e.Description)
	}
	if e.Workflow != "" {
		b = mpack.String(b, "w")
		b = mpack.String(b, e.Workflow)
	}
	if e.Step != 0 {
		b = mpack.String(b, "s")
		b = mpack.Int(b, int64(e.Step))
	}
	if len(e.Headers) > 0 {
		if err := CheckHeaders(e.Headers); err != nil {
			return nil, err
		}
		b = mpack.String(b, "h")
		b = mpack.MapHeader(b, len(e.Headers))
		var names [MaxHeaders]string // CheckHeaders held them to MaxHeaders: sorted without an allocation
		keys := names[:0]
		for k := range e.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = mpack.String(b, k)
			b = mpack.String(b, e.Headers[k])
		}
	}
	return b, nil
}

// DecodeEnvelope decodes a stored envelope, with an error that says so when the
// bytes are not one (a job planted by hand, a foreign writer, a corrupt value).
// Lengths are checked against the bytes present before anything is allocated
// (mpack.ReadMap), so an Args header claiming gigabytes is that error too.
func DecodeEnvelope(b []byte) (Envelope, error) {
	var e Envelope
	if len(b) == 0 {
		return e, fmt.Errorf("decode envelope: empty")
	}
	err := mpack.ReadMap(b, func(d *msgpack.Decoder, key string) (err error) {
		switch key {
		case "a":
			e.Args, err = d.DecodeBytes()
		case "t":
			e.Timeout, err = d.DecodeInt64()
		case "r":
			e.ResultTTL, err = d.DecodeInt64()
		case "f":
			e.FailureTTL, err = d.DecodeInt64()
		case "d":
			e.Description, err = d.DecodeString()
		case "b":
			e.Backoff, err = d.DecodeInt64()
		case "w":
			e.Workflow, err = d.DecodeString()
		case "s":
			e.Step, err = d.DecodeInt()
		case "h":
			e.Headers, err = decodeHeaders(d)
		default:
			err = d.Skip() // a field from a newer writer
		}
		return err
	})
	if err != nil {
		return e, fmt.Errorf("decode envelope: %w", err)
	}
	return e, nil
}

// storedEnvelope reassembles the envelope slices of a job hash; it reports
// false when the hash has none.
func storedEnvelope(fields map[string]string) ([]byte, bool) {
	var b []byte
	for k := 0; ; k++ {
		part, ok := fields["e"+strconv.Itoa(k)]
		if !ok {
			return b, k > 0
		}
		b = append(b, part...)
	}
}

// decodeStored decodes the envelope of a job hash, with an error when it is
// missing or not an envelope.
func decodeStored(id string, fields map[string]string) (Envelope, error) {
	raw, ok := storedEnvelope(fields)
	if !ok {
		return Envelope{}, fmt.Errorf("job %s has no stored envelope", id)
	}
	return DecodeEnvelope(raw)
}

// payload is a light job's payload split into its parts: a job enqueued ready
// to run keeps "name|priority|max retries|created ms|envelope" in the route's
// payloads hash instead of a hash of its own (see scripts/_prelude.lua).
type payload struct {
	name, priority string
	maxRetries     int
	created        time.Time
	envelope       string
	// unique and until: the unique key suffix a light unique job holds
	// and until when ("" for none), see uniquePrefix.
	unique, until string
}

// splitUnique splits the unique key suffix, until and ttl off the front of
// a light unique job's payload (uniquePrefix); ok is false when p carries none.
func splitUnique(p string) (unique, until, rest string, ok bool) {
	if !strings.HasPrefix(p, "|") {
		return "", "", p, false
	}
	var parts [3]string
	rest = p[1:]
	for i := range parts {
		j := strings.IndexByte(rest, '|')
		if j < 0 {
			return "", "", p, false
		}
		parts[i], rest = rest[:j], rest[j+1:]
	}
	if parts[0] == "" {
		return "", "", p, false
	}
	return parts[0], parts[1], rest, true
}

// uniqueHeld returns the suffix of the unique key a job names: its hash's
// field u, or, for a light job (pay not nil), the one its payload carries;
// "" for none.
func uniqueHeld(fields map[string]string, pay *string) string {
	if u := fields["u"]; u != "" {
		return u
	}
	if pay != nil {
		u, _, _, _ := splitUnique(*pay)
		return u
	}
	return ""
}

// splitPayload splits p; ok is false when p is not a payload.
func splitPayload(p string) (out payload, ok bool) {
	var parts [4]string
	unique, until, rest, _ := splitUnique(p)
	for i := range parts {
		j := strings.IndexByte(rest, '|')
		if j < 0 {
			return out, false
		}
		parts[i], rest = rest[:j], rest[j+1:]
	}
	m, err := strconv.Atoi(parts[2])
	if err != nil || parts[0] == "" || !ValidPriority(parts[1]) {
		return out, false
	}
	return payload{parts[0], parts[1], m, parseMS(parts[3]), rest, unique, until}, true
}

// fillFromPayload sets d's fields from a light job's payload, or records why it cannot.
func (d *Dispatch) fillFromPayload(p string) {
	pl, ok := splitPayload(p)
	if !ok {
		d.BadEnvelope = fmt.Errorf("job %s has an unreadable payload", d.ID)
		return
	}
	d.Name, d.Priority, d.MaxRetries, d.CreatedAt = pl.name, Priority(pl.priority), pl.maxRetries, pl.created
	d.uniqueKey, d.uniqueUntil = pl.unique, pl.until
	d.Envelope, d.BadEnvelope = DecodeEnvelope([]byte(pl.envelope))
}
