package queue

import (
	"fmt"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// Bounds of a job's headers (Envelope.Headers): small enough that headers
// never weigh on a job like its args do, large enough for a W3C trace
// context (traceparent, tracestate) and a baggage of a few entries.
const (
	MaxHeaders      = 16   // headers a job carries
	MaxHeaderKey    = 64   // bytes of a header's name
	MaxHeaderValue  = 2048 // bytes of a header's value
	MaxHeadersBytes = 4096 // bytes of all names and values together
)

// CheckHeaderKey says what is wrong with k as a header's name, or nil: 1 to
// MaxHeaderKey bytes of printable ASCII without spaces.
func CheckHeaderKey(k string) error {
	if k == "" || len(k) > MaxHeaderKey {
		return fmt.Errorf("header name %q: 1 to %d bytes", clip(k), MaxHeaderKey)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("header name %q: printable ASCII without spaces, got byte %#x at %d", clip(k), c, i)
		}
	}
	return nil
}

// CheckHeaders says what is wrong with h as a job's headers, or nil.
func CheckHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return fmt.Errorf("%d headers: a job carries at most %d", len(h), MaxHeaders)
	}
	total := 0
	for k, v := range h {
		if err := checkHeader(k, v, &total); err != nil {
			return err
		}
	}
	return nil
}

// checkHeader says what is wrong with header k=v, or nil; total counts the
// bytes of the headers checked so far, k and v included.
func checkHeader(k, v string, total *int) error {
	if err := CheckHeaderKey(k); err != nil {
		return err
	}
	if len(v) > MaxHeaderValue {
		return fmt.Errorf("header %s: value of %d bytes, at most %d", k, len(v), MaxHeaderValue)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("header %s: value is not UTF-8", k)
	}
	if *total += len(k) + len(v); *total > MaxHeadersBytes {
		return fmt.Errorf("headers of %d bytes or more: at most %d, names and values together", *total, MaxHeadersBytes)
	}
	return nil
}

// clip shortens a name quoted in an error.
func clip(s string) string {
	if len(s) > MaxHeaderKey {
		return s[:MaxHeaderKey] + "…"
	}
	return s
}

// decodeHeaders reads an envelope's headers, refusing more or longer ones
// than CheckHeaders allows before it keeps them: bytes in Redis may be
// anyone's.
func decodeHeaders(d *msgpack.Decoder) (map[string]string, error) {
	n, err := d.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	if n > MaxHeaders {
		return nil, fmt.Errorf("%d headers: a job carries at most %d", n, MaxHeaders)
	}
	h := make(map[string]string, n)
	total := 0
	for range n {
		k, err := d.DecodeString()
		if err != nil {
			return nil, fmt.Errorf("header name: %w", err)
		}
		v, err := d.DecodeString()
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", clip(k), err)
		}
		if err := checkHeader(k, v, &total); err != nil {
			return nil, err
		}
		h[k] = v
	}
	return h, nil
}
