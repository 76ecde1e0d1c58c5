package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/bananas-go/bananas/internal/mpack"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// A workflow's record keeps values of its user: its first steps' args
// (x:k), each completed step's result (o:k: a task's, a gather's array of
// its predecessors', a wait's signal payload) and the payloads of signals
// kept for a wait not reached yet (sp:<id>). Its Lua scripts pass them on
// without reading them — a step's args are one predecessor's result or the
// msgpack array of several's, which the scripts concatenate — so each
// value must stay one msgpack value. With keys, each is stored as a
// msgpack ext of type sealedValueExt whose data is the value sealed
// (queue.PurposeWorkflow) for the workflow: the scripts carry it as any
// other value, and a step's args, an array of them included, stay
// well-formed msgpack. The process that makes a step's job opens them
// (openWorkflowValue) and seals the args again for the job, as any job's;
// the one that ends a step's job opens its result, sealed for the job, and
// seals it for the workflow (stepResult).
//
// A value is bound to its workflow, not to its step: a timer's result is
// its predecessor's, a gather's holds its predecessors', and a wait's is a
// signal's payload, each passed on as it is stored. Moved to another
// workflow's record, it does not open there.
//
// Without keys the values are stored as their msgpack, as a record written
// before keys were set holds them: a reader opens the ext values it finds
// and leaves the rest as they are.

// sealedValueExt is the msgpack ext type of a value sealed for a workflow:
// 'W', a type no codec of the module registers.
const sealedValueExt int8 = 'W'

// maxSealedArrayDepth bounds how deep openWorkflowValue looks into arrays
// for sealed values: a gather of gathers nests one level per gather.
const maxSealedArrayDepth = 32

// sealWorkflowValue is how workflow wf's record keeps plain, a msgpack
// value of its user: sealed in an ext value when the client has keys, else
// plain itself.
func (c *Client) sealWorkflowValue(wf string, plain []byte) ([]byte, error) {
	if c.payloads.Keys == nil || len(plain) == 0 {
		return plain, nil
	}
	b, err := c.payloads.Pack(queue.PurposeWorkflow, wf, plain)
	if err != nil {
		return nil, fmt.Errorf("seal a value of workflow %s: %w", wf, err)
	}
	return mpack.Ext(make([]byte, 0, len(b)+6), sealedValueExt, b), nil
}

// openWorkflowValue is stored, a value as workflow wf's record keeps it
// (one sealed value, or an array of them, arrays nested: what the scripts
// make a step's args of), as plain msgpack. A value that is not sealed is
// returned as it is. An error matches queue.ErrNoKey (sealed under a key
// this process does not hold) or queue.ErrSealBroken (tampered with, or
// sealed for another workflow).
func (c *Client) openWorkflowValue(wf string, stored []byte) ([]byte, error) {
	out, _, err := openSealedIn(stored, 0, func(sealed []byte) ([]byte, error) {
		b, err := c.payloads.Unpack(queue.PurposeWorkflow, wf, sealed)
		if err != nil {
			return nil, fmt.Errorf("a value sealed for workflow %s does not open: %w", wf, err)
		}
		return b, nil
	})
	return out, err
}

// openSealedIn is v with every sealed value in it opened by open: v itself
// when v is one, each element of v when it is an array (deeper arrays
// alike). changed says whether any was; when none was, out is v, not a
// copy. Bytes that do not read as msgpack are returned as they are, for
// the decoder to refuse.
func openSealedIn(v []byte, depth int, open func([]byte) ([]byte, error)) (out []byte, changed bool, err error) {
	if typ, data, ok := mpack.ReadExt(v); ok && typ == sealedValueExt {
		b, err := open(data)
		return b, true, err
	}
	n, first, ok := mpack.ArrayOf(v)
	if !ok || depth >= maxSealedArrayDepth {
		return v, false, nil
	}
	var parts [][]byte
	at := first
	for i := 0; i < n; i++ {
		end, err := mpack.Next(v, at)
		if err != nil {
			return v, false, nil
		}
		elem := v[at:end]
		opened, ch, err := openSealedIn(elem, depth+1, open)
		if err != nil {
			return nil, false, err
		}
		if ch && parts == nil {
			parts = make([][]byte, 0, n)
			for j, p := 0, first; j < i; j++ {
				e, _ := mpack.Next(v, p)
				parts = append(parts, v[p:e])
				p = e
			}
		}
		if parts != nil {
			parts = append(parts, opened)
		}
		at = end
	}
	if parts == nil || at != len(v) {
		return v, false, nil
	}
	size := 5
	for _, p := range parts {
		size += len(p)
	}
	out = mpack.ArrayHeader(make([]byte, 0, size), n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, true, nil
}

// stepArgs is the args of a step's job, from what workflow wf's record
// made them of (openWorkflowValue): an error that no other process can
// mend — a value tampered with, or sealed for another workflow — matches
// workflows.ErrPermanent, and fails the step; one sealed under a key this
// process does not hold leaves the step to a process that holds it.
func (c *Client) stepArgs(wf string, stored []byte) ([]byte, error) {
	b, err := c.openWorkflowValue(wf, stored)
	if err != nil && !errors.Is(err, queue.ErrNoKey) {
		return nil, fmt.Errorf("%w: its args: %w", workflows.ErrPermanent, err)
	}
	return b, err
}

// stepResult is how workflow wf's record keeps the result of its step's
// job, stored as the job stores it (sealed for the job, compressed when
// long): opened, then sealed for the workflow. Errors as stepArgs'.
func (c *Client) stepResult(wf, job string, stored []byte) ([]byte, error) {
	plain, err := c.payloads.Unpack(queue.PurposeResult, job, stored)
	if err == nil {
		var sealed []byte
		if sealed, err = c.sealWorkflowValue(wf, plain); err == nil {
			return sealed, nil
		}
	}
	err = fmt.Errorf("the result of job %s: %w", job, err)
	if errors.Is(err, queue.ErrNoKey) {
		return nil, err
	}
	return nil, fmt.Errorf("%w: %w", workflows.ErrPermanent, err)
}

// resealWorkflows seals again, under the newest key, every value of every
// workflow's record that an older key sealed (`app keys rotate`), counted
// in n as the jobs are, one workflow as one: the record's fields swapped
// at once, only while each still holds what was read, so a workflow that
// moved on meanwhile is left alone (LeftAlone) for the next rotation. A
// value stored in the clear stays so: a gather's array may hold sealed
// values beside it, which one seal around the whole would hide from its
// readers.
func (c *Client) resealWorkflows(ctx context.Context, n *KeyRotation) error {
	st := redisstore.New(c.q)
	const page = 500
	for offset := 0; ; offset += page {
		ids, err := st.IDs(ctx, offset, page)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := c.resealWorkflow(ctx, st, id, n); err != nil {
				return err
			}
		}
		if len(ids) < page {
			return nil
		}
	}
}

// resealWorkflow is resealWorkflows' work on workflow id.
func (c *Client) resealWorkflow(ctx context.Context, st *redisstore.Store, id string, n *KeyRotation) error {
	values, err := st.Values(ctx, id)
	if err != nil {
		return err
	}
	newest := c.payloads.Keys.Newest()
	var swaps []queue.FieldSwap
	sealed := false
	for f, v := range values {
		out, _, err := openSealedIn(v, 0, func(data []byte) ([]byte, error) {
			sealed = true
			if kid, _ := queue.Sealed(data); kid == newest {
				return mpack.Ext(nil, sealedValueExt, data), nil
			}
			plain, err := c.payloads.Unpack(queue.PurposeWorkflow, id, data)
			if err != nil {
				return nil, err
			}
			b, err := c.payloads.Pack(queue.PurposeWorkflow, id, plain)
			if err != nil {
				return nil, err
			}
			return mpack.Ext(nil, sealedValueExt, b), nil
		})
		if err != nil {
			n.Unopened++
			return nil
		}
		if !bytes.Equal(out, v) {
			swaps = append(swaps, queue.FieldSwap{Field: f, Old: v, New: out})
		}
	}
	switch {
	case !sealed:
		return nil // nothing sealed: a workflow recorded in the clear
	case len(swaps) == 0:
		n.Already++
		return nil
	}
	swapped, err := st.SwapValues(ctx, id, swaps)
	if err != nil {
		return err
	}
	n.Swapped(swapped)
	return nil
}
