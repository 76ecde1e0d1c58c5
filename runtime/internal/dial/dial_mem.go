//go:build !bananas_nomem

package dial

import (
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Embedded is the in-process Redis behind mem://. miniredis moves key
// TTLs only when told to; a ticker tells it every ttlTick, so results and
// unique locks expire as on Redis, to within a tick. (miniredis' ClockTTL mode
// would be exact, but it walks every key with a TTL on every command: with
// tens of thousands of completed jobs that made each command milliseconds.)
type Embedded struct {
	m    *miniredis.Miniredis
	stop chan struct{}
	done chan struct{}
}

const ttlTick = 250 * time.Millisecond

func startEmbedded() (*Embedded, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("bananas: start embedded Redis: %w", err)
	}
	e := &Embedded{m: m, stop: make(chan struct{}), done: make(chan struct{})}
	go e.tick()
	return e, nil
}

func (e *Embedded) tick() {
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

// Addr is the host:port the embedded server listens on.
func (e *Embedded) Addr() string { return e.m.Addr() }

// Close stops the embedded server; a nil one is none.
func (e *Embedded) Close() {
	if e != nil {
		close(e.stop)
		<-e.done
		e.m.Close()
	}
}
