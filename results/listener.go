package results

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// subBuffer is how many undelivered payloads one subscription holds; when it is
// full the newest payload is dropped (never the receive loop blocked). Waiters
// need one message; wake-up listeners only need to know that something came.
const subBuffer = 16

// Listener multiplexes any number of channel subscriptions over one Redis
// pub/sub connection. Subscribe returns only once Redis confirmed the
// subscription, so anything published afterwards is delivered.
type Listener struct {
	rdb redis.UniversalClient

	mu        sync.Mutex
	ps        *redis.PubSub
	channels  map[string]*channelState
	reconnect chan struct{}
	closed    bool
	stop      chan struct{} // closed by Close: ends a wait between reconnects
	loopDone  chan struct{}
	pongs     map[string]chan struct{} // Flush's pings waiting for their pong, by payload
	pinged    uint64                   // Flush's pings so far: each one's payload
}

type channelState struct {
	subs      map[*Subscription]struct{}
	confirmed bool
	waiters   []chan struct{} // closed when the subscription is confirmed or refused
	refused   error           // Redis's answer to a SUBSCRIBE it refused (NOPERM)
}

// Subscription receives the payloads published on one channel.
type Subscription struct {
	C       <-chan []byte // nil for a subscription made by SubscribeFunc
	c       chan []byte
	f       func([]byte) // SubscribeFunc's callback, or nil
	l       *Listener
	channel string
	once    sync.Once
}

// NewListener returns a listener over rdb; it connects on first Subscribe.
func NewListener(rdb redis.UniversalClient) *Listener {
	return &Listener{rdb: rdb, channels: map[string]*channelState{}, reconnect: make(chan struct{}), stop: make(chan struct{})}
}

// ErrClosed is returned by Subscribe after Close.
var ErrClosed = errors.New("results: listener closed")

// Subscribe subscribes to channel and returns once Redis confirmed it.
func (l *Listener) Subscribe(ctx context.Context, channel string) (*Subscription, error) {
	c := make(chan []byte, subBuffer)
	return l.subscribe(ctx, &Subscription{C: c, c: c, l: l, channel: channel})
}

// SubscribeFunc is Subscribe for a subscriber that only needs a nudge: f is
// called with each payload on the listener's receive goroutine, so it must
// return at once (a non-blocking send, say). It saves a goroutine hand-off
// per message: a worker's wake-ups are on the path from enqueue to start.
func (l *Listener) SubscribeFunc(ctx context.Context, channel string, f func(payload []byte)) (*Subscription, error) {
	return l.subscribe(ctx, &Subscription{f: f, l: l, channel: channel})
}

func (l *Listener) subscribe(ctx context.Context, s *Subscription) (*Subscription, error) {
	channel := s.channel

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	if l.ps == nil {
		l.ps = l.open(context.WithoutCancel(ctx))
		l.loopDone = make(chan struct{})
		go l.receive(l.ps, l.loopDone)
	}
	st := l.channels[channel]
	fresh := st == nil
	if fresh {
		st = &channelState{subs: map[*Subscription]struct{}{}}
		l.channels[channel] = st
	}
	st.subs[s] = struct{}{}
	if st.confirmed {
		l.mu.Unlock()
		return s, nil
	}
	confirmed := make(chan struct{})
	st.waiters = append(st.waiters, confirmed)
	ps := l.ps
	l.mu.Unlock()

	if fresh {
		if err := ps.Subscribe(ctx, channel); err != nil {
			s.Close()
			return nil, err
		}
	}
	select {
	case <-confirmed:
		l.mu.Lock()
		err := st.refused
		l.mu.Unlock()
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("subscribe to %s: %w", channel, err)
		}
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
}

// Close ends the subscription; the Redis UNSUBSCRIBE goes out when the last
// subscriber of its channel closes. Idempotent.
func (s *Subscription) Close() {
	s.once.Do(func() { s.l.remove(s) })
}

func (l *Listener) remove(s *Subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.channels[s.channel]
	if st == nil {
		return
	}
	delete(st.subs, s)
	if len(st.subs) == 0 {
		delete(l.channels, s.channel)
		if l.ps != nil && !l.closed {
			_ = l.ps.Unsubscribe(context.Background(), s.channel)
		}
	}
}

// Reconnected returns a channel closed when the connection was re-established
// (payloads published meanwhile may be lost: re-check stored state).
func (l *Listener) Reconnected() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reconnect
}

// open returns a pub/sub connection that is not yet dialled. On a cluster it
// is one master's, picked among those that answer: go-redis would pick the
// master of the first channel's slot, and keep redialling it when it dies
// until its map of the cluster is reloaded — every subscription of the
// process (results, wake-ups of every route) down with one master. A publish
// on any node of a cluster reaches subscribers on every node.
func (l *Listener) open(ctx context.Context) *redis.PubSub {
	cc, ok := l.rdb.(*redis.ClusterClient)
	if !ok {
		return l.rdb.Subscribe(ctx)
	}
	var (
		mu   sync.Mutex
		live *redis.Client
	)
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_ = cc.ForEachMaster(pctx, func(ctx context.Context, node *redis.Client) error {
		if node.Ping(ctx).Err() == nil {
			mu.Lock()
			if live == nil {
				live = node
			}
			mu.Unlock()
		}
		return nil
	})
	if live == nil {
		return cc.Subscribe(ctx) // every master is down: go-redis's own pick, retried below
	}
	return live.Subscribe(ctx)
}

// maxReceivePause bounds the pause between failed receives: a result
// published meanwhile is still read from its stored record by its waiter
// (Waiter re-reads on reconnect), so the pause delays no result for good.
const maxReceivePause = time.Second

// receive dispatches everything the connection delivers until it is closed.
// On a cluster a broken connection is replaced by one to a master that
// answers (see open), subscribed to every channel again.
func (l *Listener) receive(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	_, cluster := l.rdb.(*redis.ClusterClient)
	var pause time.Duration // between failed receives: Redis down answers at once
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if closed || errors.Is(err, redis.ErrClosed) {
				return
			}
			var reply redis.Error
			if errors.As(err, &reply) {
				l.refuse(err)
				continue
			}
			if cluster {
				if ps = l.replace(ps); ps == nil {
					return
				}
			}
			// Otherwise go-redis reconnects and resubscribes on the next
			// Receive: after a pause, growing while Redis stays down, or
			// a refused connection would be retried in a hot loop.
			pause = min(max(2*pause, 10*time.Millisecond), maxReceivePause)
			select {
			case <-time.After(pause):
			case <-l.stop:
				return
			}
			continue
		}
		pause = 0
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				l.confirm(m.Channel)
			}
		case *redis.Message:
			l.deliver(m.Channel, []byte(m.Payload))
		case *redis.Pong:
			l.ponged(m.Payload)
		}
	}
}

// replace swaps the broken connection old for a new one subscribed to every
// channel, and returns it, or nil once the listener is closed. Confirmations
// of channels confirmed before tell waiters to re-read (see confirm).
func (l *Listener) replace(old *redis.PubSub) *redis.PubSub {
	_ = old.Close()
	for {
		ps := l.open(context.Background())
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = ps.Close()
			return nil
		}
		l.ps = ps
		channels := make([]string, 0, len(l.channels))
		for c := range l.channels {
			channels = append(channels, c)
		}
		l.mu.Unlock()
		if len(channels) == 0 {
			return ps
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := ps.Subscribe(ctx, channels...)
		cancel()
		if err == nil {
			return ps
		}
		_ = ps.Close()
		time.Sleep(100 * time.Millisecond) // every master refused: the cluster is failing over
	}
}

// refuse answers every subscription not yet confirmed with err, a reply
// Redis sent instead of a confirmation (a user without SUBSCRIBE gets
// NOPERM): waiting for a confirmation that will not come would hang the
// subscriber until its context ends, saying nothing. The channels are
// forgotten, so a later Subscribe asks Redis again.
func (l *Listener) refuse(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for channel, st := range l.channels {
		if st.confirmed {
			continue
		}
		st.refused = err
		for _, w := range st.waiters {
			close(w)
		}
		st.waiters = nil
		delete(l.channels, channel)
	}
}

func (l *Listener) confirm(channel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.channels[channel]
	if st == nil {
		return
	}
	if st.confirmed {
		// A second confirmation of a confirmed channel: go-redis re-subscribed
		// after a reconnect, and messages may have been lost in between.
		close(l.reconnect)
		l.reconnect = make(chan struct{})
		return
	}
	st.confirmed = true
	for _, w := range st.waiters {
		close(w)
	}
	st.waiters = nil
}

func (l *Listener) deliver(channel string, payload []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.channels[channel]
	if st == nil {
		return
	}
	for s := range st.subs {
		if s.f != nil {
			s.f(payload)
			continue
		}
		select {
		case s.c <- payload:
		default: // full: drop the newest rather than block every other channel
		}
	}
}

// Flush returns once every message Redis sent the listener's connection
// before the call has been delivered to its subscriptions: it pings over
// that connection and waits for the pong, which Redis sends after them. A
// waiter that finds the job gone (a job that keeps no result record ends
// without a trace) flushes before it gives up, so an end announced just
// before is not missed. That order is Redis's: on a cluster, a message
// published on another node reaches the listener's node over the cluster
// bus and may still be on its way, and the embedded server writes messages
// from a goroutine of their own, so a pong can pass one. An error when
// there is no connection, it broke, or ctx ended.
func (l *Listener) Flush(ctx context.Context) error {
	l.mu.Lock()
	ps := l.ps
	if ps == nil || l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.pinged++
	payload := fmt.Sprintf("flush-%d", l.pinged)
	if l.pongs == nil {
		l.pongs = map[string]chan struct{}{}
	}
	pong := make(chan struct{})
	l.pongs[payload] = pong
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.pongs, payload)
		l.mu.Unlock()
	}()
	if err := ps.Ping(ctx, payload); err != nil {
		return err
	}
	select {
	case <-pong:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ponged tells the Flush waiting for the pong of payload that it came.
func (l *Listener) ponged(payload string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if pong, ok := l.pongs[payload]; ok {
		close(pong)
		delete(l.pongs, payload)
	}
}

// Close closes the pub/sub connection and ends the receive loop.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.stop)
	ps, done := l.ps, l.loopDone
	l.mu.Unlock()
	if ps == nil {
		return nil
	}
	err := ps.Close()
	<-done
	return err
}
