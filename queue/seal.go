package queue

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Key is one key payloads are sealed under: AES-256-GCM with Secret (32
// bytes), named by ID in every frame it seals, so that a reader knows which
// of its keys opens it.
type Key struct {
	ID     string
	Secret []byte
}

// MaxKeyID bounds a key's id, in bytes: it is written into every sealed
// payload.
const MaxKeyID = 32

// checkKeyID reports what is wrong with a key id: 1 to MaxKeyID letters,
// digits, '-', '_' or '.'.
func checkKeyID(id string) error {
	if id == "" || len(id) > MaxKeyID {
		return fmt.Errorf("key id %q: want 1 to %d characters", id, MaxKeyID)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("key id %q: want letters, digits, '-', '_' or '.'", id)
		}
	}
	return nil
}

// ParseKeys reads BANANAS_KEYS: "id2:base64key,id1:base64key", newest
// first, each key 32 bytes in standard or URL-safe base64 (padded or not).
// An error names the entry that is wrong (its position and id, never its
// secret).
func ParseKeys(s string) ([]Key, error) {
	var keys []Key
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		id, secret, ok := strings.Cut(entry, ":")
		if !ok || entry == "" {
			return nil, fmt.Errorf("entry %d: want id:base64key, got no ':'", i+1)
		}
		b, err := decodeSecret(strings.TrimSpace(secret))
		if err != nil {
			return nil, fmt.Errorf("entry %d (key id %q): the key is not base64", i+1, id)
		}
		keys = append(keys, Key{ID: strings.TrimSpace(id), Secret: b})
	}
	if _, err := NewKeyring(keys); err != nil {
		return nil, err
	}
	return keys, nil
}

func decodeSecret(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// Keyring is a process's keys: it seals under the newest, and opens what
// any of them sealed. It is immutable and safe for concurrent use.
type Keyring struct {
	newest string
	aeads  map[string]cipher.AEAD
}

// NewKeyring makes the keyring of keys, newest first; none is an error, as
// is a key that is not 32 bytes or an id that is invalid or repeated (each
// error names the entry).
func NewKeyring(keys []Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("no keys")
	}
	r := &Keyring{newest: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, k := range keys {
		if err := checkKeyID(k.ID); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if _, dup := r.aeads[k.ID]; dup {
			return nil, fmt.Errorf("entry %d: key id %q appears twice", i+1, k.ID)
		}
		if len(k.Secret) != 32 {
			return nil, fmt.Errorf("entry %d (key id %q): the key is %d bytes; AES-256 needs 32 (openssl rand -base64 32)", i+1, k.ID, len(k.Secret))
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("entry %d (key id %q): %w", i+1, k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("entry %d (key id %q): %w", i+1, k.ID, err)
		}
		r.aeads[k.ID] = aead
	}
	return r, nil
}

// Newest is the id of the key the keyring seals under.
func (r *Keyring) Newest() string { return r.newest }

// ErrNoKey matches the error of Unpack for a payload sealed under a key
// the process does not hold (or any key, when it holds none).
var ErrNoKey = errors.New("sealed under a key this process does not hold")

// ErrSealBroken matches the error of Unpack for a sealed payload that does
// not open under its key: tampered with, cut, or sealed for another job or
// purpose.
var ErrSealBroken = errors.New("sealed payload does not open")

// nonceSize is GCM's standard nonce: 12 random bytes per sealed value.
const nonceSize = 12

// sealFrame seals body (compressed when flags say so) for job id and
// purpose under the keyring's newest key.
func (r *Keyring) sealFrame(flags byte, purpose Purpose, id string, body []byte) ([]byte, error) {
	aead := r.aeads[r.newest]
	head := 3 + len(r.newest)
	out := make([]byte, head+nonceSize, head+nonceSize+len(body)+aead.Overhead())
	out[0], out[1], out[2] = frameMark, flags|frameSealed, byte(len(r.newest))
	copy(out[3:], r.newest)
	nonce := out[head : head+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	return aead.Seal(out, nonce, body, associated(out[:head], purpose, id)), nil
}

// associated is a sealed frame's associated data: its head (mark, flags,
// key id), what it is and whose it is. A frame moved to another job, or
// from a job's args to its result, does not open.
func associated(head []byte, purpose Purpose, id string) []byte {
	ad := make([]byte, 0, len(head)+2+len(id))
	ad = append(ad, head...)
	ad = append(ad, byte(purpose), 0)
	return append(ad, id...)
}

// openFrame opens sealed, a frame whose flags say it is sealed, for job id
// and purpose: its body (still compressed when its flags say so).
func (r *Keyring) openFrame(purpose Purpose, id string, sealed []byte) ([]byte, error) {
	if len(sealed) < 3 || len(sealed) < 3+int(sealed[2]) {
		return nil, fmt.Errorf("%w: cut short (%d bytes)", ErrSealBroken, len(sealed))
	}
	head := 3 + int(sealed[2])
	keyID := string(sealed[3:head])
	var aead cipher.AEAD
	if r != nil {
		aead = r.aeads[keyID]
	}
	if aead == nil {
		return nil, fmt.Errorf("%w: key %q (set BANANAS_KEYS or runtime.WithKeys with it)", ErrNoKey, keyID)
	}
	if len(sealed) < head+nonceSize+aead.Overhead() {
		return nil, fmt.Errorf("%w under key %q: cut short (%d bytes)", ErrSealBroken, keyID, len(sealed))
	}
	nonce := sealed[head : head+nonceSize]
	body, err := aead.Open(nil, nonce, sealed[head+nonceSize:], associated(sealed[:head], purpose, id))
	if err != nil {
		return nil, fmt.Errorf("%w under key %q: tampered with, or sealed for another job", ErrSealBroken, keyID)
	}
	return body, nil
}

// Sealed reports whether a stored payload is sealed, and under which key.
func Sealed(b []byte) (keyID string, ok bool) {
	if !Framed(b) || b[1]&frameSealed == 0 || len(b) < 3+int(b[2]) {
		return "", false
	}
	return string(b[3 : 3+int(b[2])]), true
}

// TickBinding is what the args of a schedule of task are sealed for (with
// PurposeSchedule): the envelope of every tick's job, each under an id of
// its own, so they open as a schedule's args of that task in any of its
// jobs, and as nothing else (not a job's own args, not another task's).
func TickBinding(task string) string { return "tick:" + task }
