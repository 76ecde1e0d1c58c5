// Package checkpoint is the Redis side of runtime.Checkpoint and
// runtime.LastCheckpoint: a job's last checkpoint, one STRING per job on
// its route's slot (queue.Keys.Checkpoint), written only by the run that
// holds the job's lease (scripts/checkpoint.lua) and read by any later run
// of the job. The coalescing of a run's writes (at most one per period)
// is the runtime's; this package is one write, one read and one delete.
package checkpoint

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// loadLua is the package's one script, assembled by queue's loader with
// the argument and key-type checks it names.
var loadLua = sync.OnceValues(func() (*queue.Lua, error) {
	sub, err := fs.Sub(scriptFS, "scripts")
	if err != nil {
		return nil, err
	}
	return queue.LoadLua(sub)
})

var writeScript = sync.OnceValue(func() *redis.Script {
	l, err := loadLua()
	if err != nil {
		panic("checkpoint: " + err.Error())
	}
	return l.Script("checkpoint")
})

// Store reads and writes the checkpoints of one namespace.
type Store struct {
	q *queue.Queue
}

// New is the store of q's namespace.
func New(q *queue.Queue) Store { return Store{q: q} }

// Write stores value as job id's checkpoint for ttl, if the run whose
// lease token is token still holds the job's lease; stored false when it
// does not (the value is dropped). route is the job's shard route.
func (s Store) Write(ctx context.Context, route, id, token string, value []byte, ttl time.Duration) (stored bool, err error) {
	if id == "" || route == "" || token == "" {
		return false, errors.New("checkpoint: job id, route and lease token must not be empty")
	}
	k := s.q.Keys(route)
	n, err := writeScript().Run(ctx, s.q.Client(), []string{k.Checkpoint(id), k.Leases()}, id, token, value, max(ttl.Milliseconds(), 1)).Int()
	if err != nil {
		return false, fmt.Errorf("checkpoint of job %s: %w", id, err)
	}
	return n == 1, nil
}

// Read returns job id's checkpoint; found false when there is none (never
// written, expired, deleted, or a key of another type).
func (s Store) Read(ctx context.Context, route, id string) (value []byte, found bool, err error) {
	b, err := s.q.Client().Get(ctx, s.q.Keys(route).Checkpoint(id)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, false, nil
	case err != nil && isWrongType(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read checkpoint of job %s: %w", id, err)
	}
	return b, true, nil
}

// Delete removes job id's checkpoint (none is not an error).
func (s Store) Delete(ctx context.Context, route, id string) error {
	return s.q.Client().Del(ctx, s.q.Keys(route).Checkpoint(id)).Err()
}

func isWrongType(err error) bool {
	return len(err.Error()) >= 9 && err.Error()[:9] == "WRONGTYPE"
}
