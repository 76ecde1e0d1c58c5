//go:build bananas_nomem

package runtime

import "errors"

// A program built with -tags bananas_nomem links no embedded server
// (miniredis and its Lua interpreter): mem:// is refused, saying why.
type embeddedServer struct{}

func startEmbedded() (*embeddedServer, error) {
	return nil, errors.New("bananas: mem:// is not available: this program was built with -tags bananas_nomem, which leaves the embedded server out; use redis:// or build without the tag")
}

func (*embeddedServer) addr() string { return "" }

func (*embeddedServer) close() {}
