package mpack

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// decoder is a pooled decoder with the reader it reads from, so that reading
// allocates no reader per value.
type decoder struct {
	d *msgpack.Decoder
	r bytes.Reader
}

// put returns x to the pool, holding on to nothing it read.
func (x *decoder) put() {
	x.r.Reset(nil)
	x.d.Reset(nil)
	decoders.Put(x)
}

var decoders = sync.Pool{New: func() any { return &decoder{d: msgpack.NewDecoder(nil)} }}

// Unmarshal decodes b into v as msgpack.Unmarshal does, with a pooled
// decoder and reader, once Check has found b to be one value whose declared
// lengths fit in it (the decoder allocates what headers declare).
func Unmarshal(b []byte, v any) error {
	if err := Check(b); err != nil {
		return err
	}
	x := decoders.Get().(*decoder)
	defer x.put()
	x.r.Reset(b)
	x.d.Reset(&x.r)
	x.d.UsePreallocateValues(true)
	return x.d.Decode(v)
}

// ReadMap reads the msgpack map in b with a pooled decoder, calling field for
// each key to decode its value from d; field must d.Skip() keys it does not
// know (fields of a newer writer). b is refused unless it passes Check, so
// field decodes nothing whose declared length runs past b. Errors name the field they happened in.
func ReadMap(b []byte, field func(d *msgpack.Decoder, key string) error) error {
	if err := Check(b); err != nil {
		return err
	}
	x := decoders.Get().(*decoder)
	defer x.put()
	x.r.Reset(b)
	d := x.d
	d.Reset(&x.r)
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
