package dial

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// FollowTopology makes a cluster client reload its map of slots to nodes as
// soon as a node cannot be reached. go-redis reloads the map on a MOVED or
// ASK reply and on an interval, but not when a master stops answering: after
// a failover its slots would be dialled at the dead address until the next
// interval, while the promoted replica serves them. The hook sits on every
// node's client, so the reload starts at the first failed dial or read and
// the cluster client's own retries of the command (8 ms and more apart) find
// the new map.
func FollowTopology(rdb redis.UniversalClient) {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(topologyHook{cc}) })
	}
}

type topologyHook struct{ cc *redis.ClusterClient }

func (h topologyHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		h.after(err)
		return conn, err
	}
}

func (h topologyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after(err)
		return err
	}
}

func (h topologyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err == nil {
			for _, c := range cmds {
				if c.Err() != nil {
					err = c.Err()
					break
				}
			}
		}
		h.after(err)
		return err
	}
}

// after asks for a reload (go-redis runs at most one at a time, 200 ms
// apart) when err says a node could not be reached or the cluster is down
// for the slot; a reply from a node that answered says nothing about the map.
func (h topologyHook) after(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	var reply redis.Error
	if errors.As(err, &reply) && !strings.HasPrefix(err.Error(), "CLUSTERDOWN") && !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		return
	}
	h.cc.ReloadState(context.Background())
}
