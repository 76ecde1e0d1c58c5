package runtime

import (
	"context"

	"github.com/bananas-go/bananas/queue"
)

// KeyRotation says what RotateKeys did (`app keys rotate`).
type KeyRotation = queue.ResealCount

// RotateKeys seals the args of every waiting and scheduled job, on every
// route and shard, and of every schedule made at run time, under the
// newest of the client's keys (BANANAS_KEYS or WithKeys, newest first),
// and the values workflows' records keep sealed, opening each with
// whichever older key sealed it; a schedule, and a workflow, counts as a
// job in the counts. A job fetched, changed or removed while it runs (a
// schedule put) is left alone (counted in LeftAlone), so it is safe beside running workers; run it again until it
// reports none resealed and none left alone before dropping an old key.
// Without keys it is an error naming BANANAS_KEYS: there is no key to seal
// under.
func (c *Client) RotateKeys(ctx context.Context) (KeyRotation, error) {
	n, err := c.q.Reseal(ctx, c.payloads)
	if err != nil {
		return n, err
	}
	if err := c.resealSchedules(ctx, &n); err != nil {
		return n, err
	}
	return n, c.resealWorkflows(ctx, &n)
}

// resealSchedules seals the args of every schedule made at run time under
// the newest key, counted in n as the jobs are: the envelope every tick's
// job carries (sealed for every tick of the task) and the JSON its listing
// shows (sealed for the schedule), both replaced at once only while the
// record still holds what was read, so a schedule put meanwhile is left
// alone. A schedule stored in the clear is sealed now.
func (c *Client) resealSchedules(ctx context.Context, n *KeyRotation) error {
	p := c.payloads
	list, err := c.schedules().List(ctx)
	if err != nil {
		return err
	}
	for _, sc := range list {
		e, err := queue.DecodeEnvelope(sc.Envelope)
		if err != nil {
			n.Garbage++
			continue
		}
		argsKid, argsSealed := queue.Sealed(e.Args)
		jsonKid, jsonSealed := queue.Sealed([]byte(sc.Args))
		if (len(e.Args) == 0 || argsSealed && argsKid == p.Keys.Newest()) && (sc.Args == "" || jsonSealed && jsonKid == p.Keys.Newest()) {
			n.Already++
			continue
		}
		raw, aerr := p.Unpack(queue.PurposeSchedule, scheduleBinding(sc.Name), e.Args)
		plainJSON, jerr := p.Unpack(queue.PurposeSchedule, "schedule:"+sc.ID, []byte(sc.Args))
		if aerr != nil || jerr != nil {
			n.Unopened++
			continue
		}
		if e.Args, err = p.Pack(queue.PurposeSchedule, scheduleBinding(sc.Name), raw); err != nil {
			return err
		}
		env, err := queue.EncodeEnvelope(e)
		if err != nil {
			return err
		}
		// The record's fields (scheduler.Schedule): env the tick's
		// envelope, args the listing's JSON.
		swaps := []queue.FieldSwap{{Field: "env", Old: sc.Envelope, New: env}}
		if sc.Args != "" {
			sealed, err := c.sealScheduleJSON(sc.ID, string(plainJSON))
			if err != nil {
				return err
			}
			swaps = append(swaps, queue.FieldSwap{Field: "args", Old: []byte(sc.Args), New: []byte(sealed)})
		}
		swapped, err := c.q.SwapFields(ctx, c.schedules().Key(sc.ID), swaps...)
		if err != nil {
			return err
		}
		n.Swapped(swapped)
	}
	return nil
}

// RotateKeys is the session's Client.RotateKeys, for `app keys rotate`.
func (s session) RotateKeys(ctx context.Context) (queue.ResealCount, error) {
	return s.c.RotateKeys(ctx)
}

// RotateKeys is the client's RotateKeys, for the admin layer's (the API's
// POST /api/v1/keys/rotate).
func (in *inspector) RotateKeys(ctx context.Context) (queue.ResealCount, error) {
	return in.c.RotateKeys(ctx)
}
