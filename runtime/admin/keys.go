package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// KeysAdmin is an Admin that reseals stored payloads under the newest key
// of its process: the Inspector is one. The CLI (`app keys rotate`) and the
// API (POST /api/v1/keys/rotate) check for it.
type KeysAdmin interface {
	// RotateKeys seals the args of every waiting and scheduled job, and
	// of every schedule, under the newest of the process's keys
	// (BANANAS_KEYS, newest first) and says how many it resealed, found
	// under that key already, and left alone. A process without keys is refused (BadInput on field "keys",
	// naming BANANAS_KEYS): there is no key to seal under.
	RotateKeys(ctx context.Context) (queue.ResealCount, error)
}

// keyRotator is the runtime's side of RotateKeys: the client's keys.
type keyRotator interface {
	RotateKeys(ctx context.Context) (queue.ResealCount, error)
}

// RotateKeys reseals what waits under the newest key (see KeysAdmin).
func (in *Inspector) RotateKeys(ctx context.Context) (queue.ResealCount, error) {
	r, ok := in.rt.(keyRotator)
	if !ok {
		return queue.ResealCount{}, Invalid("keys", "this program cannot rotate keys")
	}
	n, err := r.RotateKeys(ctx)
	if errors.Is(err, queue.ErrNoResealKeys) {
		return n, Invalid("keys", "%s", err.Error())
	}
	return n, err
}

// RotateKeys reseals through the admin it wraps, recorded as rotateKeys
// with the counts.
func (a audited) RotateKeys(ctx context.Context) (queue.ResealCount, error) {
	ka, ok := a.Admin.(KeysAdmin)
	if !ok {
		err := Invalid("keys", "this program cannot rotate keys")
		a.record(ctx, "rotateKeys", "", err, "")
		return queue.ResealCount{}, err
	}
	n, err := ka.RotateKeys(ctx)
	a.record(ctx, "rotateKeys", "", err, RotationDetail(n))
	return n, err
}

// RotationDetail is the audit log's detail of a rotation that did n.
func RotationDetail(n queue.ResealCount) string {
	return fmt.Sprintf("%d resealed, %d already under the newest key, %d left alone", n.Resealed, n.Already, n.LeftAlone)
}

// openError is a failure message as the program shows it (sealed, it is
// opened: "encrypted" without its key); as stored when the runtime seals
// nothing.
func (in *Inspector) openError(id, stored string) string {
	if o, ok := in.rt.(interface {
		OpenError(id, stored string) string
	}); ok {
		return o.OpenError(id, stored)
	}
	return stored
}

// scheduleSealer is the runtime's side of a schedule's sealed args.
type scheduleSealer interface {
	// SealSchedule seals the args of d (its envelope's, packed for job by
	// BatchJob, and its JSON) as a schedule's, when the program has keys.
	SealSchedule(d *scheduler.ScheduleDef, job string) error
	// OpenSchedule opens the args of s as stored ("encrypted" without
	// the key).
	OpenSchedule(s *bananastype.Schedule)
}

// sealSchedule seals d's args as a schedule's (scheduleSealer).
func (in *Inspector) sealSchedule(d *scheduler.ScheduleDef, job string) error {
	if s, ok := in.rt.(scheduleSealer); ok {
		return s.SealSchedule(d, job)
	}
	return nil
}

// openSchedule opens s's args (scheduleSealer).
func (in *Inspector) openSchedule(s *bananastype.Schedule) {
	if o, ok := in.rt.(scheduleSealer); ok {
		o.OpenSchedule(s)
	}
}
