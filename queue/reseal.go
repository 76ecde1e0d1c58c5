package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Key rotation: Reseal walks every route's waiting and scheduled jobs and
// seals the args of each under the newest key (`app keys rotate`), so that
// once it reports none resealed, the older keys can go.

var resealScript = newScript("reseal")

// resealPage is how many jobs one read and one reseal.lua call take.
const resealPage = 100

// ErrNoResealKeys is Reseal's error when it is given no keys.
var ErrNoResealKeys = errors.New("no keys to reseal under: set BANANAS_KEYS (id:base64key, newest first)")

// ResealCount says what Reseal did.
type ResealCount struct {
	Resealed  int `json:"resealed"`   // jobs whose args are sealed under the newest key now
	Already   int `json:"already"`    // jobs whose args were under the newest key (or empty) already
	LeftAlone int `json:"left_alone"` // jobs running, or fetched, changed or removed between the read and the write
	Unopened  int `json:"unopened"`   // jobs whose args no key given opens (sealed under a key not held, or broken)
	Garbage   int `json:"garbage"`    // jobs whose stored envelope does not decode: not touched
}

// Swapped counts the compare-and-set of one entry's fields (a schedule's,
// a workflow's record): resealed when it swapped them, left alone when
// one no longer held what was read.
func (c *ResealCount) Swapped(swapped bool) {
	if swapped {
		c.Resealed++
	} else {
		c.LeftAlone++
	}
}

// resealEntry is one job to reseal: its kind ("p" a light job's payload, "h"
// a job hash's envelope), id, job key and the old and new stored bytes.
type resealEntry struct {
	kind, id, key string
	old, new      []byte
}

// Reseal seals the args of every waiting and scheduled job of every route
// under the newest of p's keys: each job's envelope is read, its args opened
// with whichever key sealed them and sealed again, and the new envelope
// written by reseal.lua only while the stored one is still the bytes read
// and the job is not leased or dead. It is safe to run beside workers and
// to run again. Without keys it is an error: there is nothing to seal under.
func (q *Queue) Reseal(ctx context.Context, p *Payloads) (ResealCount, error) {
	var c ResealCount
	if p == nil || p.Keys == nil {
		return c, ErrNoResealKeys
	}
	routes, err := q.Routes(ctx)
	if err != nil {
		return c, err
	}
	for _, r := range routes {
		if err := q.resealRoute(ctx, p, r, &c); err != nil {
			return c, fmt.Errorf("route %s: %w", r, err)
		}
	}
	return c, nil
}

func (q *Queue) resealRoute(ctx context.Context, p *Payloads, route string, c *ResealCount) error {
	k := q.Keys(route)
	var batch []resealEntry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		done, left, err := q.resealBatch(ctx, k, batch)
		c.Resealed += done
		c.LeftAlone += left
		batch = batch[:0]
		return err
	}
	add := func(e resealEntry) error {
		batch = append(batch, e)
		if len(batch) >= resealPage {
			return flush()
		}
		return nil
	}

	// Light jobs: the payloads hash, in pages. A running light job is
	// there too; reseal.lua leaves it alone (it is leased).
	var cursor uint64
	for {
		kv, next, err := q.rdb.HScan(ctx, k.Payloads(), cursor, "", resealPage).Result()
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			id, stored := kv[i], kv[i+1]
			pl, ok := splitPayload(stored)
			if !ok {
				c.Garbage++
				continue
			}
			newEnv, ok := resealEnvelope(p, id, pl.name, []byte(pl.envelope), c)
			if !ok {
				continue
			}
			prefix := stored[:len(stored)-len(pl.envelope)]
			if err := add(resealEntry{kind: "p", id: id, old: []byte(stored), new: append([]byte(prefix), newEnv...)}); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}

	// Jobs with a hash of their own: scheduled, and waiting in a ready list
	// or a keyed set (ids there whose job has no hash are light jobs, done
	// above).
	idPages := func(key string, isList, keyed bool, each func(ids []string) error) error {
		for start := int64(0); ; start += resealPage {
			var ids []string
			var err error
			if isList {
				ids, err = q.rdb.LRange(ctx, key, start, start+resealPage-1).Result()
			} else {
				ids, err = q.rdb.ZRange(ctx, key, start, start+resealPage-1).Result()
			}
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			read := len(ids)
			if keyed {
				out := ids[:0]
				for _, m := range ids {
					if id, ok := memberID(m); ok {
						out = append(out, id)
					}
				}
				ids = out
			}
			if len(ids) > 0 {
				if err := each(ids); err != nil {
					return err
				}
			}
			if read < resealPage {
				return nil
			}
		}
	}
	hashes := func(ids []string) error {
		cmds := make([]*redis.MapStringStringCmd, len(ids))
		_, err := q.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = pipe.HGetAll(ctx, k.Job(id))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, id := range ids {
			f := cmds[i].Val()
			if len(f) == 0 || f["s"] != "" {
				continue // a light job, gone, or dead
			}
			raw, ok := storedEnvelope(f)
			if !ok {
				c.Garbage++
				continue
			}
			newEnv, ok := resealEnvelope(p, id, f["n"], raw, c)
			if !ok {
				continue
			}
			if err := add(resealEntry{kind: "h", id: id, key: k.Job(id), old: raw, new: newEnv}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := idPages(k.Scheduled(), false, false, hashes); err != nil {
		return err
	}
	for _, pr := range Priorities {
		if err := idPages(k.List(pr), true, false, hashes); err != nil {
			return err
		}
		if err := idPages(k.Keyed(pr), false, true, hashes); err != nil {
			return err
		}
	}
	return flush()
}

// resealEnvelope is env, of job id of task name, with its args sealed
// under the newest key, for the job or, when a schedule sealed them, for
// every tick of the task (TickBinding) as before; ok is false when there is
// nothing to write, counted in c.
func resealEnvelope(p *Payloads, id, name string, env []byte, c *ResealCount) (out []byte, ok bool) {
	e, err := DecodeEnvelope(env)
	if err != nil {
		c.Garbage++
		return nil, false
	}
	if kid, sealed := Sealed(e.Args); sealed && kid == p.Keys.Newest() {
		c.Already++
		return nil, false
	}
	purpose, bound := PurposeArgs, id
	plain, err := p.Unpack(purpose, bound, e.Args)
	if errors.Is(err, ErrSealBroken) && name != "" {
		if tp, terr := p.Unpack(PurposeSchedule, TickBinding(name), e.Args); terr == nil {
			purpose, bound, plain, err = PurposeSchedule, TickBinding(name), tp, nil
		}
	}
	if err != nil {
		c.Unopened++
		return nil, false
	}
	args, err := p.Pack(purpose, bound, plain)
	if err != nil || bytes.Equal(args, e.Args) {
		c.Already++ // empty args: nothing to seal
		return nil, false
	}
	e.Args = args
	if out, err = EncodeEnvelope(e); err != nil {
		c.Garbage++
		return nil, false
	}
	return out, true
}

// resealBatch runs reseal.lua on entries of route k.
func (q *Queue) resealBatch(ctx context.Context, k Keys, entries []resealEntry) (done, left int, err error) {
	keys := []string{k.Payloads(), k.Leases(), k.Dead()}
	args := []any{len(entries)}
	for _, e := range entries {
		if e.kind == "h" {
			keys = append(keys, e.key)
		}
		args = append(args, e.kind, e.id, e.old, e.new)
	}
	res, err := resealScript.Run(ctx, q.rdb, keys, args...).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("reseal.lua replied %v", res)
	}
	return int(res[0]), int(res[1]), nil
}

var swapFieldsScript = newScript("swap_fields")

// FieldSwap is one field of a hash SwapFields replaces: its value Old, as
// read, by New.
type FieldSwap struct {
	Field    string
	Old, New []byte
}

// SwapFields replaces the fields of hash key with their new values, all of
// them or none, only while each still holds its old value
// (swap_fields.lua): swapped is false when one changed since it was read,
// or the hash is gone. Safe to run twice: the second run finds the new
// values and writes nothing.
func (q *Queue) SwapFields(ctx context.Context, key string, swaps ...FieldSwap) (swapped bool, err error) {
	args := make([]any, 0, 3*len(swaps))
	for _, s := range swaps {
		args = append(args, s.Field, s.Old, s.New)
	}
	n, err := swapFieldsScript.Run(ctx, q.rdb, []string{key}, args...).Int()
	return n == 1, err
}
