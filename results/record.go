package results

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Record is what a finished job leaves behind.
type Record struct {
	ID         string `msgpack:"id"`
	OK         bool   `msgpack:"ok"`
	Value      []byte `msgpack:"v,omitempty"` // msgpack-encoded handler result (opaque here)
	Error      string `msgpack:"e,omitempty"` // failure message when !OK; the last failed run's when OK
	Attempts   int    `msgpack:"a,omitempty"` // failed runs before the final outcome
	FinishedAt int64  `msgpack:"t"`           // unix milliseconds
	// What the job was, for a success: a finished job is only its record (its
	// arguments are not kept), so Job(id) reads these from it.
	Name      string `msgpack:"n,omitempty"`
	Priority  string `msgpack:"p,omitempty"`
	CreatedAt int64  `msgpack:"c,omitempty"` // unix milliseconds
	StartedAt int64  `msgpack:"s,omitempty"` // unix milliseconds, of the successful run
}

// Encode encodes r for storage and for its pub/sub announcement.
func Encode(r Record) ([]byte, error) { return msgpack.Marshal(&r) }

// Decode decodes a stored or announced record.
func Decode(b []byte) (Record, error) {
	var r Record
	if err := msgpack.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("results: decode record: %w", err)
	}
	if r.ID == "" {
		return r, fmt.Errorf("results: decode record: no job id")
	}
	return r, nil
}

// Channel is the pub/sub channel on which the record of job id is announced.
func Channel(ns, id string) string { return ns + ":result:{" + id + "}" }
