package queue_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/queue"
)

func testKey(id string, fill byte) queue.Key {
	return queue.Key{ID: id, Secret: bytes.Repeat([]byte{fill}, 32)}
}

func ring(t testing.TB, keys ...queue.Key) *queue.Keyring {
	t.Helper()
	r, err := queue.NewKeyring(keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A sealed payload opens for its own job and purpose under the key it was
// sealed with, old keys included; moved to another job, or from args to
// result, or with one byte changed, it does not open, with an error that
// says so; without its key, the error says which key is missing.
func TestSeal_OpensOnlyForItsJobAndPurpose(t *testing.T) {
	marker := []byte("marker-3f9c1e: card 4242 4242 4242 4242")
	old := &queue.Payloads{CompressOver: 4 << 10, Limit: 1 << 20, Keys: ring(t, testKey("k1", 1))}
	sealed, err := old.Pack(queue.PurposeArgs, "job-a", marker)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, marker) || !queue.Framed(sealed) {
		t.Fatalf("sealed payload holds the marker in the clear: %q", sealed)
	}
	if id, ok := queue.Sealed(sealed); !ok || id != "k1" {
		t.Fatalf("Sealed = %q, %v; want k1", id, ok)
	}
	again, _ := old.Pack(queue.PurposeArgs, "job-a", marker)
	if bytes.Equal(again, sealed) {
		t.Fatal("sealing the same value twice gave the same bytes: the nonce is not fresh")
	}
	rotated := &queue.Payloads{CompressOver: 4 << 10, Limit: 1 << 20, Keys: ring(t, testKey("k2", 2), testKey("k1", 1))}
	if got, err := rotated.Unpack(queue.PurposeArgs, "job-a", sealed); err != nil || !bytes.Equal(got, marker) {
		t.Fatalf("a keyring with k1 as its older key: Unpack = %q, %v; want the marker", got, err)
	}
	if resealed, _ := rotated.Pack(queue.PurposeArgs, "job-a", marker); func() bool { id, _ := queue.Sealed(resealed); return id != "k2" }() {
		t.Fatal("a keyring seals under another key than its newest")
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	retagged := bytes.Clone(sealed)
	retagged[1] |= 1 // claims to be compressed
	for name, tc := range map[string]struct {
		p       *queue.Payloads
		purpose queue.Purpose
		id      string
		b       []byte
		want    error
		says    string
	}{
		"another job":       {rotated, queue.PurposeArgs, "job-b", sealed, queue.ErrSealBroken, `under key "k1": tampered with, or sealed for another job`},
		"as the result":     {rotated, queue.PurposeResult, "job-a", sealed, queue.ErrSealBroken, "tampered with, or sealed for another job"},
		"one byte flipped":  {rotated, queue.PurposeArgs, "job-a", tampered, queue.ErrSealBroken, "tampered with"},
		"flags rewritten":   {rotated, queue.PurposeArgs, "job-a", retagged, queue.ErrSealBroken, "tampered with"},
		"cut short":         {rotated, queue.PurposeArgs, "job-a", sealed[:20], queue.ErrSealBroken, "cut short"},
		"no keys":           {&queue.Payloads{Limit: 1 << 20}, queue.PurposeArgs, "job-a", sealed, queue.ErrNoKey, `key "k1"`},
		"only another key":  {&queue.Payloads{Limit: 1 << 20, Keys: ring(t, testKey("k2", 2))}, queue.PurposeArgs, "job-a", sealed, queue.ErrNoKey, `key "k1"`},
		"same id other key": {&queue.Payloads{Limit: 1 << 20, Keys: ring(t, testKey("k1", 9))}, queue.PurposeArgs, "job-a", sealed, queue.ErrSealBroken, "tampered with"},
	} {
		got, err := tc.p.Unpack(tc.purpose, tc.id, tc.b)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Unpack = %q, %v; want an error matching %v saying %q", name, got, err, tc.want, tc.says)
		}
	}
	// Long payloads are compressed, then sealed; plain ones still read.
	big := compressible(1 << 20)
	sealedBig, err := rotated.Pack(queue.PurposeResult, "job-a", big)
	if err != nil || len(sealedBig) > 64<<10 || bytes.Contains(sealedBig, big[:64]) {
		t.Fatalf("1 MiB sealed: %d bytes, %v; want at most 64 KiB, compressed then sealed", len(sealedBig), err)
	}
	if got, err := rotated.Unpack(queue.PurposeResult, "job-a", sealedBig); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Unpack of the sealed 1 MiB = %d bytes, %v", len(got), err)
	}
	if got, err := rotated.Unpack(queue.PurposeArgs, "job-a", []byte{0x81, 0xa1, 'x', 1}); err != nil || len(got) != 4 {
		t.Fatalf("Unpack of plain msgpack with keys = %v, %v; want it as it is", got, err)
	}
}

// BANANAS_KEYS parses newest first; each bad entry is an error naming its
// position and id, never its secret.
func TestParseKeys_ABadEntryIsNamed(t *testing.T) {
	k2 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
	k1 := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	keys, err := queue.ParseKeys("k2:" + k2 + ", k1:" + k1)
	if err != nil || len(keys) != 2 || keys[0].ID != "k2" || keys[1].ID != "k1" || keys[1].Secret[0] != 1 {
		t.Fatalf("ParseKeys = %v, %v; want k2 then k1", keys, err)
	}
	short := base64.StdEncoding.EncodeToString([]byte("sixteen bytes!!!"))
	for in, want := range map[string]string{
		"k2:" + k2 + ",k1:" + short:        `entry 2 (key id "k1"): the key is 16 bytes; AES-256 needs 32`,
		"k2:" + k2 + ",k1":                 "entry 2: want id:base64key",
		"k2:" + k2 + ",k1:not*base64":      `entry 2 (key id "k1"): the key is not base64`,
		"k2:" + k2 + ",k2:" + k2:           `entry 2: key id "k2" appears twice`,
		"k 2:" + k2:                        `entry 1: key id "k 2"`,
		":" + k2:                           `entry 1: key id ""`,
		"":                                 "entry 1: want id:base64key",
		"k2:" + k2 + ",":                   "entry 2: want id:base64key",
		strings.Repeat("k", 33) + ":" + k2: "want 1 to 32 characters",
	} {
		_, err := queue.ParseKeys(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKeys(%q) = %v; want an error saying %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), k2) {
			t.Errorf("ParseKeys(%q): the error %q shows a secret", in, err)
		}
	}
}
