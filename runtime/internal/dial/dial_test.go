package dial_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime/internal/dial"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A URL is checked without connecting, and a refusal says what is wrong
// with it; a password never shows in a message.
func TestCheck_NamesWhatIsWrongWithAURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"redis://localhost:6379/0", "rediss://h:6380", "redis+cluster://a:7000,b:7001", "mem://"} {
		if err := dial.Check(ok); err != nil {
			t.Errorf("Check(%q) = %v; want nil", ok, err)
		}
	}
	for in, want := range map[string]string{
		"localhost:6379":    "want redis://",
		"ftp://h:1":         `unknown scheme "ftp"`,
		"redis://h:0":       "port must be a number from 1 to 65535",
		"redis+cluster://h": `cluster node "h" has no port`,
		"redis+cluster://":  "no cluster nodes",
	} {
		err := dial.Check(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v; want an error with %q", in, err, want)
		}
	}
	for in, want := range map[string]string{
		"redis://u:secret@h:1/0":    "redis://u:***@h:1/0",
		"redis://h:1/0":             "redis://h:1/0",
		"redis+cluster://:pw@a:1,b": "redis+cluster://:***@a:1,b",
		"no scheme":                 "no scheme",
	} {
		if got := dial.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q; want %q", in, got, want)
		}
	}
}

// Open gives a client that answers, for the embedded server and a real
// redis-server alike, and Addr names where it talks as an operator reads it.
func TestOpen_ConnectsAndAddrSaysWhere(t *testing.T) {
	redistest.EachURL(t, func(t *testing.T, url string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rdb, emb, err := dial.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		defer emb.Close()
		defer rdb.Close()
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatalf("ping through Open(%q): %v", url, err)
		}
		addr := dial.Addr(rdb, emb)
		if url == "mem://" {
			if addr != "mem://" {
				t.Fatalf("Addr of the embedded server = %q; want mem://", addr)
			}
			return
		}
		if _, _, err := net.SplitHostPort(addr); err != nil || !strings.Contains(url, addr) {
			t.Fatalf("Addr = %q (%v); want the host:port of %s", addr, err, url)
		}
	})
}
