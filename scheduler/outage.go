package scheduler

import (
	"log/slog"
	"sync"
	"time"
)

// OutageLog logs the failures of a background loop (the promoter, the cron
// runner, a worker's heartbeat, its lease renewal...) as outages: one line
// when a run of failures starts and one when the loop works again, none in
// between. A loop that meets a Redis outage fails on every pass until
// Redis is back; a line per pass buries everything else in the log.
//
// Outages are kept per key (a route, or "" for a loop over all of them), so
// that a loop whose routes live on different Redis nodes says which are
// down. The zero value is not usable; make one with NewOutageLog. It is safe
// for concurrent use.
type OutageLog struct {
	log  *slog.Logger
	loop string
	mu   sync.Mutex
	down map[string]*outageRun
}

type outageRun struct {
	since    time.Time
	failures int
}

// NewOutageLog returns the outage log of the loop named loop ("promoter",
// "heartbeat"), writing to log.
func NewOutageLog(log *slog.Logger, loop string) *OutageLog {
	return &OutageLog{log: log, loop: loop, down: map[string]*outageRun{}}
}

// Failed records a failure of the loop's pass for key; the first of a run
// of failures is logged, as a warning, with err.
func (o *OutageLog) Failed(key string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d := o.down[key]; d != nil {
		d.failures++
		return
	}
	o.down[key] = &outageRun{since: time.Now(), failures: 1}
	o.log.Warn("bananas: outage: "+o.loop+" failing; it keeps trying, and says when it works again", o.attrs(key, "err", err)...)
}

// OK records a pass of the loop for key that worked: the end of an outage,
// logged, when there was one.
func (o *OutageLog) OK(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.down[key]
	if d == nil {
		return
	}
	delete(o.down, key)
	o.log.Info("bananas: outage over: "+o.loop+" works again",
		o.attrs(key, "down_for", time.Since(d.since).Round(time.Millisecond).String(), "failures", d.failures)...)
}

// Down reports whether key is in an outage.
func (o *OutageLog) Down(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down[key] != nil
}

func (o *OutageLog) attrs(key string, kv ...any) []any {
	out := []any{"loop", o.loop}
	if key != "" {
		out = append(out, "route", key)
	}
	return append(out, kv...)
}
