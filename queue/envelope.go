package queue

import (
	"fmt"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// Envelope is the immutable part of a job, stored msgpack-encoded in the
// fields e0, e1, ... of its hash (60-byte slices, so the hash stays compact). What the Lua scripts must read (name, priority, max
// retries, attempts, state) lives in fields of its own, so no script decodes it.
type Envelope struct {
	Args        []byte `msgpack:"a"`           // msgpack-encoded task arguments
	Timeout     int64  `msgpack:"t,omitempty"` // ms; 0 takes the worker's default
	ResultTTL   int64  `msgpack:"r,omitempty"` // ms the success record is kept; 0 = default
	FailureTTL  int64  `msgpack:"f,omitempty"` // ms the failure record is kept; 0 = default
	Description string `msgpack:"d,omitempty"` // free text shown by `job` and the dashboard
}

// EncodeEnvelope encodes e for storage.
func EncodeEnvelope(e Envelope) ([]byte, error) { return msgpack.Marshal(&e) }

// DecodeEnvelope decodes a stored envelope, with an error that says so when the
// bytes are not one (a job planted by hand, a foreign writer, a corrupt value).
func DecodeEnvelope(b []byte) (Envelope, error) {
	var e Envelope
	if len(b) == 0 {
		return e, fmt.Errorf("decode envelope: empty")
	}
	if err := msgpack.Unmarshal(b, &e); err != nil {
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
