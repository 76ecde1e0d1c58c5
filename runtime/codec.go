package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/mpack"
)

// encoder is a reusable msgpack encoder writing to its own buffer.
type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	e.enc.SetSortMapKeys(true)
	return e
}}

// encode msgpack-encodes v with map keys sorted, so that identical values give
// identical bytes (unique keys hash the encoded args). Encoders are pooled:
// every enqueue and every result passes through here.
func encode(v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	b, err := e.encode(v)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// encode encodes v into e's buffer; the bytes are valid until e goes back to
// the pool (callers that copy them anyway skip encode's clone).
func (e *encoder) encode(v any) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

func decode(b []byte, v any) error { return mpack.Unmarshal(b, v) }

// jsonOf is the JSON of b, a stored T (args or a result), as its Go type
// marshals: how `job ID`, Client.Job and the API show what a job holds.
func jsonOf[T any](b []byte) (json.RawMessage, error) {
	var v T
	if err := decode(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// checkPayload refuses an encoded value over the client's payload limit with an
// error that says what it was, its size and the limit.
func checkPayload(what, name string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("%w: %s%s is %s, over the payload limit of %s (raise it with runtime.MaxPayload)",
			ErrPayloadTooLarge, what, name, byteSize(n), byteSize(limit))
	}
	return nil
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
