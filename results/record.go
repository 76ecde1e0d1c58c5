package results

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/mpack"
	"github.com/bananas-go/bananas/queue"
)

// Record is what a finished job leaves behind.
type Record struct {
	ID         string `msgpack:"id"`
	OK         bool   `msgpack:"ok"`
	Value      []byte `msgpack:"v,omitempty"` // msgpack-encoded handler result (opaque here)
	Error      string `msgpack:"e,omitempty"` // failure message when !OK; the last failed run's when OK
	Attempts   int    `msgpack:"a,omitempty"` // the run it describes, 1-based; a job canceled while waiting: its failed runs
	FinishedAt int64  `msgpack:"t"`           // unix milliseconds
	// What the job was: a completed job is only its record (ack drops its
	// hash), so Job(id) reads these from it, as enqueued.
	Name        string `msgpack:"n,omitempty"`
	Priority    string `msgpack:"p,omitempty"`
	CreatedAt   int64  `msgpack:"c,omitempty"` // unix milliseconds
	StartedAt   int64  `msgpack:"s,omitempty"` // unix milliseconds, of the successful run
	Args        []byte `msgpack:"x,omitempty"` // msgpack-encoded task arguments
	MaxRetries  int    `msgpack:"m,omitempty"`
	Timeout     int64  `msgpack:"o,omitempty"` // ms as enqueued; 0: the worker's default
	Description string `msgpack:"d,omitempty"`
	// Canceled: the job was canceled (runtime.StatusCanceled), not failed; OK is false.
	Canceled bool `msgpack:"k,omitempty"`
	// FailedAt: when its failed runs ended (unix milliseconds, oldest
	// first), the last queue.FailuresKept of them, the final one included.
	FailedAt []int64 `msgpack:"fa,omitempty"`
	// FailedStartedAt: when each run of FailedAt started (unix
	// milliseconds, 0 where it was not kept), in the same order.
	FailedStartedAt []int64 `msgpack:"sa,omitempty"`
	// Earlier: the job's lives before it was replayed, oldest first, as
	// queue.ParseEarlierLife reads them.
	Earlier []string `msgpack:"ph,omitempty"`
	// Worker is the id of the worker that recorded the end, kept when the
	// end also goes to the task history (which shows it).
	Worker string `msgpack:"w,omitempty"`
	// Workflow is the id of the workflow the job was a step of, so that a
	// completed step's job still names it.
	Workflow string `msgpack:"wf,omitempty"`
	// Expired: the job did not start before its expiry and never ran
	// (runtime.StatusExpired); OK is false. expire.lua writes such records,
	// with the job's envelope (field "ev"), from which Decode takes Args,
	// Timeout, Description and Workflow.
	Expired bool `msgpack:"xp,omitempty"`
}

// Encode encodes r for storage and for its pub/sub announcement: a msgpack
// map keyed by the struct's tags, empty omitempty fields left out, integers in
// their smallest form. Written by hand on internal/mpack because every ack pays
// for it (with reflection it takes 12% of a worker's CPU in a drain); msgpack.Unmarshal
// reads it, and Decode reads what Marshal wrote.
func Encode(r Record) ([]byte, error) {
	n := 3 // id, ok, t
	for _, set := range []bool{len(r.Value) > 0, r.Error != "", r.Attempts != 0, r.Name != "", r.Priority != "", r.CreatedAt != 0, r.StartedAt != 0,
		len(r.Args) > 0, r.MaxRetries != 0, r.Timeout != 0, r.Description != "", r.Canceled, len(r.FailedAt) > 0, len(r.FailedStartedAt) > 0, len(r.Earlier) > 0, r.Worker != "", r.Workflow != "", r.Expired} {
		if set {
			n++
		}
	}
	b := make([]byte, 0, 96+len(r.ID)+len(r.Value)+len(r.Error)+len(r.Name)+len(r.Args)+len(r.Description)+len(r.Worker)+len(r.Workflow))
	b = mpack.MapHeader(b, n)
	b = mpack.String(mpack.String(b, "id"), r.ID)
	b = mpack.Bool(mpack.String(b, "ok"), r.OK)
	if len(r.Value) > 0 {
		b = mpack.Bytes(mpack.String(b, "v"), r.Value)
	}
	if r.Error != "" {
		b = mpack.String(mpack.String(b, "e"), r.Error)
	}
	if r.Attempts != 0 {
		b = mpack.Int(mpack.String(b, "a"), int64(r.Attempts))
	}
	b = mpack.Int(mpack.String(b, "t"), r.FinishedAt)
	if r.Name != "" {
		b = mpack.String(mpack.String(b, "n"), r.Name)
	}
	if r.Priority != "" {
		b = mpack.String(mpack.String(b, "p"), r.Priority)
	}
	if r.CreatedAt != 0 {
		b = mpack.Int(mpack.String(b, "c"), r.CreatedAt)
	}
	if r.StartedAt != 0 {
		b = mpack.Int(mpack.String(b, "s"), r.StartedAt)
	}
	if len(r.Args) > 0 {
		b = mpack.Bytes(mpack.String(b, "x"), r.Args)
	}
	if r.MaxRetries != 0 {
		b = mpack.Int(mpack.String(b, "m"), int64(r.MaxRetries))
	}
	if r.Timeout != 0 {
		b = mpack.Int(mpack.String(b, "o"), r.Timeout)
	}
	if r.Description != "" {
		b = mpack.String(mpack.String(b, "d"), r.Description)
	}
	if r.Canceled {
		b = mpack.Bool(mpack.String(b, "k"), true)
	}
	if len(r.FailedAt) > 0 {
		b = mpack.ArrayHeader(mpack.String(b, "fa"), len(r.FailedAt))
		for _, t := range r.FailedAt {
			b = mpack.Int(b, t)
		}
	}
	if len(r.FailedStartedAt) > 0 {
		b = mpack.ArrayHeader(mpack.String(b, "sa"), len(r.FailedStartedAt))
		for _, t := range r.FailedStartedAt {
			b = mpack.Int(b, t)
		}
	}
	if len(r.Earlier) > 0 {
		b = mpack.ArrayHeader(mpack.String(b, "ph"), len(r.Earlier))
		for _, l := range r.Earlier {
			b = mpack.String(b, l)
		}
	}
	if r.Worker != "" {
		b = mpack.String(mpack.String(b, "w"), r.Worker)
	}
	if r.Workflow != "" {
		b = mpack.String(mpack.String(b, "wf"), r.Workflow)
	}
	if r.Expired {
		b = mpack.Bool(mpack.String(b, "xp"), true)
	}
	return b, nil
}

// Decode decodes a stored or announced record, refusing one whose lengths
// claim more than the bytes present before anything is allocated
// (mpack.ReadMap): records come from Redis and pub/sub.
func Decode(b []byte) (Record, error) {
	var r Record
	err := mpack.ReadMap(b, func(d *msgpack.Decoder, key string) (err error) {
		switch key {
		case "id":
			r.ID, err = d.DecodeString()
		case "ok":
			r.OK, err = d.DecodeBool()
		case "v":
			r.Value, err = d.DecodeBytes()
		case "e":
			r.Error, err = d.DecodeString()
		case "a":
			r.Attempts, err = d.DecodeInt()
		case "t":
			r.FinishedAt, err = d.DecodeInt64()
		case "n":
			r.Name, err = d.DecodeString()
		case "p":
			r.Priority, err = d.DecodeString()
		case "c":
			r.CreatedAt, err = d.DecodeInt64()
		case "s":
			r.StartedAt, err = d.DecodeInt64()
		case "x":
			r.Args, err = d.DecodeBytes()
		case "m":
			r.MaxRetries, err = d.DecodeInt()
		case "o":
			r.Timeout, err = d.DecodeInt64()
		case "d":
			r.Description, err = d.DecodeString()
		case "k":
			r.Canceled, err = d.DecodeBool()
		case "fa":
			r.FailedAt, err = decodeArray(d, (*msgpack.Decoder).DecodeInt64)
		case "sa":
			r.FailedStartedAt, err = decodeArray(d, (*msgpack.Decoder).DecodeInt64)
		case "ph":
			r.Earlier, err = decodeArray(d, (*msgpack.Decoder).DecodeString)
		case "w":
			r.Worker, err = d.DecodeString()
		case "wf":
			r.Workflow, err = d.DecodeString()
		case "xp":
			r.Expired, err = d.DecodeBool()
		case "ev":
			err = r.fromEnvelope(d)
		default:
			err = d.Skip() // a field from a newer writer
		}
		return err
	})
	if err != nil {
		return r, fmt.Errorf("results: decode record: %w", err)
	}
	if r.ID == "" {
		return r, fmt.Errorf("results: decode record: no job id")
	}
	return r, nil
}

// decodeArray reads an array of elements decoded by elem; nil when the
// array is empty or nil. Its length is bounded by the bytes present
// (mpack.ReadMap checked them), so a forged length allocates nothing past
// the record's size.
func decodeArray[T any](d *msgpack.Decoder, elem func(*msgpack.Decoder) (T, error)) ([]T, error) {
	n, err := d.DecodeArrayLen()
	if err != nil || n <= 0 {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		if out[i], err = elem(d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fromEnvelope fills what the job was from the envelope an expired record
// carries (see Expired). An envelope that does not decode leaves them empty:
// the record still says how the job ended.
func (r *Record) fromEnvelope(d *msgpack.Decoder) error {
	raw, err := d.DecodeBytes()
	if err != nil {
		return err
	}
	if e, err := queue.DecodeEnvelope(raw); err == nil {
		r.Args, r.Timeout, r.Description, r.Workflow = e.Args, e.Timeout, e.Description, e.Workflow
	}
	return nil
}
