package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is returned by an enqueue that Redis ran but that fewer
// replicas than WaitForReplicas asks for acknowledged in time: the jobs are
// stored on the master, and a failover before they reach a replica loses them.
var ErrNotReplicated = errors.New("not acknowledged by enough replicas")

// MaxReplicaWait is the longest WaitForReplicas accepts: WAIT blocks the
// connection, and the reply must come before the client's read timeout.
const MaxReplicaWait = 2 * time.Second

type replication struct {
	n       int
	timeout time.Duration
}

// WaitForReplicas makes every enqueue return only once n replicas of the
// route's master acknowledged its write (Redis WAIT on the connection that
// wrote it), or fail with ErrNotReplicated after timeout. Redis replicates
// asynchronously: without it, a job acknowledged to its producer can be lost
// when its master dies before the replica that takes over has it.
func (q *Queue) WaitForReplicas(n int, timeout time.Duration) error {
	if n < 0 {
		return fmt.Errorf("replicas to wait for must be >= 0, got %d", n)
	}
	if n > 0 && (timeout < time.Millisecond || timeout > MaxReplicaWait) {
		return fmt.Errorf("replica wait must be from 1ms to %s, got %s", MaxReplicaWait, timeout)
	}
	q.replicas = replication{n, timeout}
	return nil
}

// runWrite runs a retry-safe enqueue script and, when WaitForReplicas asks
// for it, WAIT behind it on the same connection to the master of keys[0].
func (q *Queue) runWrite(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	if q.replicas.n == 0 {
		return s.Run(ctx, q.rdb, keys, args...).Result()
	}
	var node redis.Cmdable = q.rdb
	if cc, ok := q.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, err
		}
		node = m
	}
	for try := 0; ; try++ {
		pipe := node.Pipeline()
		run := s.EvalSha(ctx, pipe, keys, args...)
		wait := pipe.Do(ctx, "WAIT", q.replicas.n, q.replicas.timeout.Milliseconds())
		_, _ = pipe.Exec(ctx) // each command's own error is read below
		if isNoScript(run.Err()) && try == 0 {
			if err := s.Load(ctx, node).Err(); err != nil {
				return nil, err
			}
			continue // the script did not run: running it again is its first run
		}
		if err := run.Err(); err != nil {
			return nil, err
		}
		acked, err := wait.Int()
		if err != nil {
			return nil, fmt.Errorf("written; waiting for replicas: %w", err)
		}
		if acked < q.replicas.n {
			return nil, fmt.Errorf("written, but %d of %d replicas acknowledged it within %s: %w", acked, q.replicas.n, q.replicas.timeout, ErrNotReplicated)
		}
		return run.Val(), nil
	}
}
