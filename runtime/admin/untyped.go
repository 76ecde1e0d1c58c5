package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/mpack"
)

// untypedJSON is b, a stored msgpack value (a job's args or result), as
// generic JSON, decoded without its Go type: what a program shows of a job
// whose task it does not register. Maps become objects (a key that is not
// a string is written as fmt prints it), binary strings base64, and a
// float that JSON cannot hold (NaN, ±Inf) its name as a string. b is
// refused unless it passes mpack.Check, so nothing is decoded past its
// bytes or deeper than the check allows.
func untypedJSON(b []byte) (json.RawMessage, error) {
	if err := mpack.Check(b); err != nil {
		return nil, err
	}
	d := msgpack.NewDecoder(bytes.NewReader(b))
	d.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	v, err := d.DecodeInterface()
	if err != nil {
		return nil, err
	}
	return json.Marshal(jsonable(v))
}

// jsonable turns a generically decoded msgpack value into one that
// encoding/json writes.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			key, ok := k.(string)
			if !ok {
				key = fmt.Sprint(k)
			}
			m[key] = jsonable(e)
		}
		return m
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case []any:
		for i := range x {
			x[i] = jsonable(x[i])
		}
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Sprint(x)
		}
	}
	return v
}
