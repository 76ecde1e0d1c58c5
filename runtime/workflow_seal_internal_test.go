package runtime

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bananas-go/bananas/internal/mpack"
	"github.com/bananas-go/bananas/queue"
)

func sealingClient(t testing.TB, keys ...queue.Key) *Client {
	t.Helper()
	p := &queue.Payloads{Limit: 1 << 20}
	if len(keys) > 0 {
		ring, err := queue.NewKeyring(keys)
		if err != nil {
			t.Fatal(err)
		}
		p.Keys = ring
	}
	return &Client{payloads: p}
}

// What the workflow scripts make a step's args of — one sealed value, an
// array of them, a gather's array nested in another, beside values stored
// in the clear — opens to the msgpack of the plain values, and decodes as
// the step's type; bytes with nothing sealed come back as they are.
func TestOpenWorkflowValue_OpensSealedValuesAtAnyArrayDepth(t *testing.T) {
	c := sealingClient(t, queue.Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)})
	seal := func(s string) []byte {
		plain, err := encode(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.sealWorkflowValue("wf1", plain)
		if err != nil || bytes.Contains(b, plain) {
			t.Fatalf("sealWorkflowValue(%q) = % x, %v", s, b, err)
		}
		return b
	}
	plainOf := func(s string) []byte {
		b, _ := encode(s)
		return b
	}
	array := func(parts ...[]byte) []byte {
		return append(mpack.ArrayHeader(nil, len(parts)), bytes.Join(parts, nil)...)
	}

	one, err := c.openWorkflowValue("wf1", seal("alpha-1"))
	var s string
	if err != nil || decode(one, &s) != nil || s != "alpha-1" {
		t.Fatalf("one sealed value opens to %q, %v", s, err)
	}
	nested := array(array(seal("alpha-1"), plainOf("beta-2")), seal("gamma-3"), []byte{0xc0})
	opened, err := c.openWorkflowValue("wf1", nested)
	var got []any
	if err != nil || decode(opened, &got) != nil || len(got) != 3 || got[1] != "gamma-3" || got[2] != nil {
		t.Fatalf("a nested array opens to %v, %v", got, err)
	}
	if inner, _ := got[0].([]any); len(inner) != 2 || inner[0] != "alpha-1" || inner[1] != "beta-2" {
		t.Fatalf("the inner array opens to %v", got[0])
	}
	clear := array(plainOf("x"), array(plainOf("y")))
	if b, err := c.openWorkflowValue("wf1", clear); err != nil || &b[0] != &clear[0] {
		t.Fatalf("a value with nothing sealed: %v, or a copy", err)
	}
	if _, err := c.openWorkflowValue("wf2", array(seal("alpha-1"))); !errors.Is(err, queue.ErrSealBroken) {
		t.Fatalf("a value of wf1 opened in wf2: %v; want ErrSealBroken", err)
	}
	if _, err := sealingClient(t).openWorkflowValue("wf1", seal("alpha-1")); !errors.Is(err, queue.ErrNoKey) {
		t.Fatalf("a value opened without keys: %v; want ErrNoKey", err)
	}
	if b, err := sealingClient(t).sealWorkflowValue("wf1", plainOf("z")); err != nil || !bytes.Equal(b, plainOf("z")) {
		t.Fatalf("without keys a value is stored as its msgpack: % x, %v", b, err)
	}
}

// Whatever bytes a record holds, opening them never panics: a value that
// does not read is returned as it is, for the decoder to refuse.
func FuzzOpenWorkflowValue(f *testing.F) {
	c := sealingClient(f, queue.Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)})
	sealed, _ := c.sealWorkflowValue("wf1", []byte{0xa1, 'x'})
	f.Add(sealed)
	f.Add(append(mpack.ArrayHeader(nil, 2), sealed...))
	f.Add(append(mpack.ArrayHeader(nil, 1), sealed[:len(sealed)-3]...))
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc7})
	f.Add(bytes.Repeat([]byte{0x91}, 200))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = c.openWorkflowValue("wf1", b)
	})
}
