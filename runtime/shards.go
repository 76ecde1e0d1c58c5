package runtime

import (
	"context"
	"fmt"

	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
)

// newShards is the watcher of the shards of w's routes (routeshards): it
// listens on each shard as subscribeRoute does, and has a shard it gains
// given its limits, fetched from and kept.
func (w *Worker) newShards() *routeshards.Watcher {
	return routeshards.New(routeshards.Config{
		Queue: w.c.q, Listener: w.c.listener, Routes: w.opts.Routes, Logger: w.opts.Logger,
		Subscribe: w.subscribeRoute,
		Added: func(ctx context.Context, added []string) {
			w.storeShardLimits(ctx, added)
			w.engine.Wake("")
			if w.keeper != nil {
				w.keeper.Kick() // the new shards want a keeper now, not at the next round
			}
		},
	})
}

// subscribeRoute listens on route's wake channel (a job made ready while
// the worker waits: it fetches), its cancel channel (running jobs asked to
// cancel stop at once; the renewals find those this misses, see
// CancelRequests) and, for a worker that keeps routes, its keeper channel
// (the keeper gave the route up: try to take it over at once).
func (w *Worker) subscribeRoute(ctx context.Context, route string) ([]*results.Subscription, error) {
	k := w.c.q.Keys(route)
	listen := []struct {
		channel string
		f       func([]byte)
	}{
		{w.engine.WakeChannel(route), func([]byte) { w.engine.Wake(route) }},
		{k.CancelChannel(), func(id []byte) { w.engine.Cancel(string(id)) }},
	}
	if w.keeper != nil {
		listen = append(listen, struct {
			channel string
			f       func([]byte)
		}{k.KeeperChannel(), func([]byte) { w.keeper.Kick() }})
	}
	var subs []*results.Subscription
	for _, l := range listen {
		sub, err := w.c.listener.SubscribeFunc(ctx, l.channel, l.f)
		if err != nil {
			for _, s := range subs {
				s.Close()
			}
			return nil, fmt.Errorf("bananas: worker: subscribe: %w", err)
		}
		subs = append(subs, sub)
	}
	return subs, nil
}
