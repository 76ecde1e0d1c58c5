//go:build !bananas_nomem

package runtime

import (
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// embeddedServer is the in-process Redis behind mem://. miniredis moves key
// TTLs only when told to; a ticker tells it every ttlTick, so results and
// unique locks expire as on Redis, to within a tick. (miniredis' ClockTTL mode
// would be exact, but it walks every key with a TTL on every command: with
// tens of thousands of completed jobs that made each command milliseconds.)
type embeddedServer struct {
	m    *miniredis.Miniredis
	stop chan struct{}
	done chan struct{}
}

const ttlTick = 250 * time.Millisecond

func startEmbedded() (*embeddedServer, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("bananas: start embedded Redis: %w", err)
	}
	e := &embeddedServer{m: m, stop: make(chan struct{}), done: make(chan struct{})}
	go e.tick()
	return e, nil
}

func (e *embeddedServer) tick() {
	defer close(e.done)
	t := time.NewTicker(ttlTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// addr is the host:port the embedded server listens on.
func (e *embeddedServer) addr() string { return e.m.Addr() }

func (e *embeddedServer) close() {
	if e != nil {
		close(e.stop)
		<-e.done
		e.m.Close()
	}
}
