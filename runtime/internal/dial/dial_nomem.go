//go:build bananas_nomem

package dial

import "errors"

// A program built with -tags bananas_nomem links no embedded server
// (miniredis and its Lua interpreter): mem:// is refused, saying why.
type Embedded struct{}

func startEmbedded() (*Embedded, error) {
	return nil, errors.New("bananas: mem:// is not available: this program was built with -tags bananas_nomem, which leaves the embedded server out; use redis:// or build without the tag")
}

func (*Embedded) Addr() string { return "" }

// Close does nothing: there is no embedded server.
func (*Embedded) Close() {}
