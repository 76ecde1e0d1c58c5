package mpack

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

var decoders = sync.Pool{New: func() any { return msgpack.NewDecoder(nil) }}

// ReadMap reads the msgpack map in b with a pooled decoder, calling field for
// each key to decode its value from d; field must d.Skip() keys it does not
// know (fields of a newer writer). Errors name the field they happened in.
func ReadMap(b []byte, field func(d *msgpack.Decoder, key string) error) error {
	d := decoders.Get().(*msgpack.Decoder)
	defer decoders.Put(d)
	d.Reset(bytes.NewReader(b))
	n, err := d.DecodeMapLen()
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("not a map")
	}
	for range n {
		key, err := d.DecodeString()
		if err != nil {
			return err
		}
		if err := field(d, key); err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
	}
	return nil
}
