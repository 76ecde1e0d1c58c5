package runtime

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/engine"
)

// DefaultCompressOver is the size, in bytes, over which args, results and
// the other stored payloads are compressed (zstd) unless
// BANANAS_COMPRESS_OVER or CompressOver says otherwise.
const DefaultCompressOver = queue.DefaultCompressOver

// CompressOver compresses (zstd) every payload this client stores — args,
// results — that is longer than n bytes, in place of $BANANAS_COMPRESS_OVER
// (default 4 KiB); 0 or less compresses nothing. Handlers never see it: a
// compressed payload is inflated before it is decoded, by any process, and
// never past its MaxPayload (a compressed bomb is refused, not inflated).
func CompressOver(n int) ConnectOption {
	return func(c *connectConfig) { c.payloads.compressOver, c.payloads.compressSet = n, true }
}

// payloadConfig is what the options said of stored payloads; what they did
// not say comes from the environment.
type payloadConfig struct {
	compressOver int
	compressSet  bool
}

// ParseCompressOver reads a BANANAS_COMPRESS_OVER value: a whole number of
// bytes, 0 or negative for never.
func ParseCompressOver(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("BANANAS_COMPRESS_OVER=%q is invalid: a whole number of bytes (0 or less: compress nothing)", s)
	}
	return n, nil
}

// make is the client's Payloads: limit is its payload limit, which no
// compressed payload may inflate past.
func (pc payloadConfig) make(limit int, getenv func(string) string) (*queue.Payloads, error) {
	p := &queue.Payloads{CompressOver: DefaultCompressOver, Limit: limit}
	switch {
	case pc.compressSet:
		p.CompressOver = pc.compressOver
	case getenv("BANANAS_COMPRESS_OVER") != "":
		n, err := ParseCompressOver(getenv("BANANAS_COMPRESS_OVER"))
		if err != nil {
			return nil, fmt.Errorf("bananas: %w", err)
		}
		p.CompressOver = n
	}
	return p, nil
}

// packArgs is the stored form of a job's encoded args, raw, for job id.
func (c *Client) packArgs(cfg jobConfig, id string, raw []byte) ([]byte, error) {
	return c.payloads.Pack(queue.PurposeArgs, id, raw)
}

// packResult is the stored form of the encoded result of d's run. A
// workflow step's result is kept as it is: the workflow passes it on to
// the steps after it, which read it as their args.
func (x *executor) packResult(d *queue.Dispatch, result []byte) ([]byte, error) {
	if d.Envelope.Workflow != "" {
		return result, nil
	}
	out, err := x.payloads.Pack(queue.PurposeResult, d.ID, result)
	if err != nil {
		return nil, fmt.Errorf("store the result of %s job %s: %w", d.Name, d.ID, err)
	}
	return out, nil
}

// unopened is the outcome of a run of d whose stored args do not unpack
// (err): a frame that does not read, a compressed bomb. No retry can make
// it read: the job is dead-lettered with the reason.
func (x *executor) unopened(d *queue.Dispatch, err error) engine.Outcome {
	return engine.Outcome{Failed: true, Final: true, Message: fmt.Sprintf("args of %s job %s do not read: %v", d.Name, d.ID, err)}
}

// historyRow is the task history's row of rec, a record of route: its args
// and result unpacked first (inflated).
func (w *Worker) historyRow(route string, rec results.Record) bananastype.Job {
	p := w.c.payloads
	if b, err := p.Unpack(queue.PurposeArgs, rec.ID, rec.Args); err == nil {
		rec.Args = b
	}
	if b, err := p.Unpack(queue.PurposeResult, rec.ID, rec.Value); err == nil {
		rec.Value = b
	}
	return w.handlers.historyRow(route, rec)
}

// unpackJob unpacks the stored args and result of j, read from Redis.
func (c *Client) unpackJob(j *bananastype.Job) {
	if b, err := c.payloads.Unpack(queue.PurposeArgs, j.ID, j.ArgsMsgpack); err == nil {
		j.ArgsMsgpack = b
	} else {
		j.ArgsMsgpack = nil
	}
	if b, err := c.payloads.Unpack(queue.PurposeResult, j.ID, j.Result); err == nil {
		j.Result = b
	} else {
		j.Result = nil
	}
}
