package queue

import (
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// ValidRoute reports whether route is a legal routing key: 1-64 characters of
// A-Z a-z 0-9 _ - (checked by hand: every enqueue checks its route, and a
// regexp cost 4% of a producer's CPU).
func ValidRoute(route string) bool {
	if len(route) == 0 || len(route) > 64 {
		return false
	}
	for i := 0; i < len(route); i++ {
		switch c := route[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// CheckRoute returns an error naming route when it is not a legal routing key.
func CheckRoute(route string) error {
	if !ValidRoute(route) {
		return fmt.Errorf("invalid route %q: a route is 1-64 characters of A-Z a-z 0-9 _ -", route)
	}
	return nil
}

// NewID returns a fresh job id: a ULID (time-ordered, unique) followed by a dot
// and the route, so that the id alone locates the job's keys in standalone and
// cluster mode alike.
func NewID(route string, now time.Time) string {
	// DefaultEntropy is a crypto-seeded, mutex-guarded monotonic reader: no
	// getrandom syscall per id, which would cost a producer 15% of its CPU.
	// Formatted on the stack, so the id is one allocation.
	id := ulid.MustNew(ulid.Timestamp(now), ulid.DefaultEntropy())
	var text [ulid.EncodedSize]byte
	_ = id.MarshalTextTo(text[:]) // cannot fail: text is EncodedSize long
	var b strings.Builder
	b.Grow(len(text) + 1 + len(route))
	b.Write(text[:])
	b.WriteByte('.')
	b.WriteString(route)
	return b.String()
}

// RouteOf returns the route encoded in an id made by NewID: a route or a
// shard of one (see ShardNames), whose keys hold the job.
func RouteOf(id string) (string, bool) {
	if len(id) < ulid.EncodedSize+2 || id[ulid.EncodedSize] != '.' {
		return "", false
	}
	if _, err := ulid.ParseStrict(id[:ulid.EncodedSize]); err != nil {
		return "", false
	}
	route := id[ulid.EncodedSize+1:]
	return route, ValidShardRoute(route)
}

// CheckID validates a caller-chosen job id (runtime.WithID) on its own; see
// CheckChosenID for the rule that needs the job's route.
func CheckID(id string) error {
	if id == "" || len(id) > 200 || strings.ContainsAny(id, "{} \t\r\n") {
		return fmt.Errorf("invalid job id %q: 1-200 characters without spaces or braces", id)
	}
	return nil
}

// CheckChosenID validates id, chosen by the caller for a job of route: as
// CheckID, and an id of the shape NewID makes (a ULID, a dot, a route) must
// end in route itself or one of its shards (the job then goes to that shard). Such an id is located by its suffix alone (RouteOf),
// so one ending in another route would send Job, Cancel, Delete and Await to
// that route's keys, where the job is not. Ids of any other shape (order-42,
// invoice.7) are located by searching the known routes.
func CheckChosenID(id, route string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	return CheckIDRoute(id, route)
}

// CheckIDRoute is the rule of CheckChosenID that needs the job's route, for
// an id that CheckID already passed (runtime.WithID checks it on its own).
func CheckIDRoute(id, route string) error {
	if r, ok := RouteOf(id); ok && ShardBase(r) != ShardBase(route) {
		return fmt.Errorf("invalid job id %q for route %q: an id of the shape Bananas generates (a ULID, a dot, a route) is located by the route it ends in, and this one ends in route %q; end it in .%s or choose an id of another shape", id, route, r, route)
	}
	return nil
}
