package queue

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A stored payload — a job's args in its envelope, a result in its record,
// a progress note — is the msgpack of its value, or a frame: the byte
// frameMark, a flags byte, and a body. frameMark is 0xc1, the one byte
// msgpack never uses, so a payload written before frames existed (or by a
// process that frames nothing) reads as it always did, and telling the two
// apart costs one byte comparison.
//
//	0xc1 flags body                          flags: frameZstd
//	0xc1 flags len(key id) key id nonce box  flags: frameSealed (| frameZstd)
//
// A sealed frame's box is AES-256-GCM over the body (compressed first when
// frameZstd is set: a ciphertext does not compress), with the frame's head
// (mark, flags, key id), the payload's Purpose and its job's id as
// associated data (seal.go).
const frameMark = 0xc1

const (
	frameZstd   = 1 << 0
	frameSealed = 1 << 1
)

// DefaultCompressOver is the size, in bytes, over which a payload is
// compressed unless BANANAS_COMPRESS_OVER (or runtime.CompressOver) says
// otherwise.
const DefaultCompressOver = 4 << 10

// Framed reports whether a stored payload is a frame (compressed, sealed,
// or both) rather than plain msgpack.
func Framed(b []byte) bool { return len(b) > 1 && b[0] == frameMark }

// ErrPayloadTooLarge matches the error of Open for a compressed payload
// that would inflate past the reader's limit: a compressed bomb, or a
// writer with a larger payload limit than the reader's.
var ErrPayloadTooLarge = errors.New("payload too large")

// zstdEncoder compresses payloads: EncodeAll is safe for concurrent use,
// and the fastest level is what a queue can afford on every enqueue and
// every ack (a 1 MiB JSON-like payload still shrinks past 20×).
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic("queue: zstd encoder: " + err.Error()) // only for bad options, which are constants here
	}
	return e
})

// zstdDecoder inflates payloads. DecodeAll is safe for concurrent use, and
// with the cap limit it never writes past the capacity of the buffer it is
// given: inflate sizes that buffer from the frame's declared size, checked
// against the limit first, so a bomb is refused before anything is
// allocated for it.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderLowmem(true))
	if err != nil {
		panic("queue: zstd decoder: " + err.Error())
	}
	return d
})

// compress is b compressed, and whether that is smaller than b and
// declares its size (the encoder leaves it out of some tiny frames, which
// inflate would refuse).
func compress(b []byte) ([]byte, bool) {
	z := zstdEncoder().EncodeAll(b, make([]byte, 0, len(b)/8+64))
	var h zstd.Header
	return z, len(z) < len(b) && h.Decode(z) == nil && h.HasFCS
}

// inflate is the zstd body z inflated, refused without allocating when its
// frame does not declare its size or declares more than limit bytes, and
// refused when it inflates to anything but what it declares.
func inflate(z []byte, limit int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(z); err != nil {
		return nil, fmt.Errorf("compressed payload: %w", err)
	}
	if !h.HasFCS {
		return nil, fmt.Errorf("compressed payload does not declare its inflated size: refused")
	}
	if h.FrameContentSize > uint64(limit) {
		return nil, fmt.Errorf("%w: compressed payload of %d bytes would inflate to %d bytes, over the limit of %d bytes (a compressed bomb, or a writer with a larger runtime.MaxPayload): refused, not inflated",
			ErrPayloadTooLarge, len(z), h.FrameContentSize, limit)
	}
	out, err := zstdDecoder().DecodeAll(z, make([]byte, 0, int(h.FrameContentSize)))
	if err != nil {
		return nil, fmt.Errorf("compressed payload does not inflate within its declared %d bytes: %w", h.FrameContentSize, err)
	}
	if uint64(len(out)) != h.FrameContentSize {
		return nil, fmt.Errorf("compressed payload inflates to %d bytes, not the %d it declares", len(out), h.FrameContentSize)
	}
	return out, nil
}

// Payloads is how a process writes and reads stored payloads: those over
// CompressOver bytes compressed, every one sealed under the newest of Keys
// when there are keys, and none inflated past Limit. Its zero value frames
// nothing and refuses every compressed payload (Limit 0): a client sets
// them (runtime.Connect). It is safe for concurrent use once set.
type Payloads struct {
	CompressOver int      // compress a payload longer than this; 0 or less: never
	Limit        int      // the largest payload Unpack inflates
	Keys         *Keyring // nil: seal nothing, and open nothing sealed
}

// Purpose is what a payload is: sealed, it is bound into the associated
// data, so that a job's sealed args do not open as its result.
type Purpose byte

// The purposes of payloads.
const (
	PurposeArgs       Purpose = 'a'
	PurposeResult     Purpose = 'r'
	PurposeNote       Purpose = 'n' // a progress note
	PurposeCheckpoint Purpose = 'c' // a workflow's checkpoint
	PurposeSignal     Purpose = 's' // a workflow's signal
	PurposeError      Purpose = 'e' // a failure message stored with a job
	PurposeSchedule   Purpose = 'S' // a schedule's args: its every tick's job's, and their JSON
	PurposeWorkflow   Purpose = 'w' // a value a workflow's record keeps: a first step's args, a step's result, a signal's payload
)

// Pack is the stored form of plain, the payload of job id for purpose.
// Without keys, a payload of at most CompressOver bytes is plain itself
// (no copy, no work); a longer one is a frame of it compressed when that
// is smaller. With keys, every non-empty payload is sealed (compressed
// first when it is long), under a fresh random nonce.
func (p *Payloads) Pack(purpose Purpose, id string, plain []byte) ([]byte, error) {
	long := p.CompressOver > 0 && len(plain) > p.CompressOver
	if p.Keys == nil && !long || len(plain) == 0 {
		return plain, nil
	}
	body, flags := plain, byte(0)
	if long {
		if z, smaller := compress(plain); smaller {
			body, flags = z, frameZstd
		}
	}
	if p.Keys != nil {
		return p.Keys.sealFrame(flags, purpose, id, body)
	}
	if flags == 0 {
		return plain, nil
	}
	out := make([]byte, 0, 2+len(body))
	out = append(out, frameMark, flags)
	return append(out, body...), nil
}

// Unpack is the payload stored is the stored form of: stored itself when
// it is not a frame (no copy, no work), else the frame opened (for job id
// and purpose: ErrNoKey without its key, ErrSealBroken when it does not
// open) and inflated, never past Limit bytes.
func (p *Payloads) Unpack(purpose Purpose, id string, stored []byte) ([]byte, error) {
	if !Framed(stored) {
		return stored, nil
	}
	flags := stored[1]
	if flags&^(frameZstd|frameSealed) != 0 || flags == 0 {
		return nil, fmt.Errorf("payload frame with unknown flags %#x (written by a newer version?)", flags)
	}
	body := stored[2:]
	if flags&frameSealed != 0 {
		var err error
		if body, err = p.Keys.openFrame(purpose, id, stored); err != nil {
			return nil, err
		}
	}
	if flags&frameZstd != 0 {
		return inflate(body, p.Limit)
	}
	return body, nil
}
