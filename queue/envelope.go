package queue

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Envelope is the immutable part of a job, stored msgpack-encoded in the "e"
// field of its hash. What the Lua scripts must read (name, priority, max
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
