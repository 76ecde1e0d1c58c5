package runtime

import (
	"context"

	"github.com/bananas-go/bananas/queue"
)

// KeyRotation says what RotateKeys did (`app keys rotate`).
type KeyRotation = queue.ResealCount

// RotateKeys seals the args of every waiting and scheduled job, on every
// route and shard, under the newest of the client's keys (BANANAS_KEYS or
// WithKeys, newest first), opening each with whichever older key sealed it.
// A job fetched, changed or removed while it runs is left alone (counted in
// LeftAlone), so it is safe beside running workers; run it again until it
// reports none resealed and none left alone before dropping an old key.
// Without keys it is an error naming BANANAS_KEYS: there is no key to seal
// under.
func (c *Client) RotateKeys(ctx context.Context) (KeyRotation, error) {
	return c.q.Reseal(ctx, c.payloads)
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
