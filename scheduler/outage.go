package scheduler

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// OutageLog logs the failures of a background loop (the promoter, the cron
// runner, a worker's heartbeat, its lease renewal...). A failure to reach
// Redis (Unreachable) is an outage: one line when a run of them starts and
// one when the loop works again, none in between, since a loop that meets a
// Redis outage fails on every pass until Redis is back and a line per pass
// buries everything else in the log. Any other failure is Redis's answer
// (a key of the wrong type, a script's refusal): it will not pass by
// itself, so each is logged, but at most one line per key every
// ErrorLogEvery, the next line counting those left out, so that a loop on a
// short period cannot flood the log.
//
// Outages are kept per key (a route, or "" for a loop over all of them), so
// that a loop whose routes live on different Redis nodes says which are
// down. The zero value is not usable; make one with NewOutageLog. It is safe
// for concurrent use.
type OutageLog struct {
	log    *slog.Logger
	loop   string
	now    func() time.Time
	mu     sync.Mutex
	down   map[string]*outageRun
	errors map[string]*errorRun
}

// ErrorLogEvery is how often, at most, an OutageLog logs the failures of a
// key that are not outages.
const ErrorLogEvery = 10 * time.Second

// errorRun is when a key's last failure that is not an outage was logged,
// and how many were left out since.
type errorRun struct {
	logged  time.Time
	skipped int
}

type outageRun struct {
	since    time.Time
	failures int
}

// NewOutageLog returns the outage log of the loop named loop ("promoter",
// "heartbeat"), writing to log.
func NewOutageLog(log *slog.Logger, loop string) *OutageLog {
	return &OutageLog{log: log, loop: loop, now: time.Now, down: map[string]*outageRun{}, errors: map[string]*errorRun{}}
}

// Failed records a failure of the loop's pass for key, logged as a
// warning with err: the first of an outage's run of failures, or a failure
// that is not an outage, rate-limited.
func (o *OutageLog) Failed(key string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !Unreachable(err) {
		o.failedForGood(key, err)
		return
	}
	if d := o.down[key]; d != nil {
		d.failures++
		return
	}
	o.down[key] = &outageRun{since: o.now(), failures: 1}
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
		o.attrs(key, "down_for", o.now().Sub(d.since).Round(time.Millisecond).String(), "failures", d.failures)...)
}

// failedForGood logs err, a failure of key's pass that is Redis's answer,
// unless one was logged less than ErrorLogEvery ago.
func (o *OutageLog) failedForGood(key string, err error) {
	now := o.now()
	r := o.errors[key]
	if r == nil {
		r = &errorRun{}
		o.errors[key] = r
	} else if now.Sub(r.logged) < ErrorLogEvery {
		r.skipped++
		return
	}
	o.log.Warn("bananas: "+o.loop+" failed; it keeps trying", o.attrs(key, "err", err, "unlogged_failures", r.skipped)...)
	r.logged, r.skipped = now, 0
}

// Unreachable reports whether err is a failure to reach Redis, which passes
// when Redis is back: no answer (the network, a timeout, a closed
// connection) or an answer saying the server cannot serve the call yet
// (LOADING, READONLY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, BUSY: a restart,
// a failover, a busy script). A call that failed so may or may not have run.
// Any other error is Redis's answer to the call (a wrong type, a script's
// refusal), which the same call gets again; a closed client
// (redis.ErrClosed) is the caller's own doing.
func Unreachable(err error) bool {
	if errors.Is(err, redis.ErrClosed) {
		return false
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return true
	}
	for _, p := range notServing {
		if strings.HasPrefix(reply.Error(), p) {
			return true
		}
	}
	return false
}

// notServing are the prefixes of the error replies of a server that cannot
// serve a call for now.
var notServing = []string{"LOADING ", "READONLY ", "TRYAGAIN ", "CLUSTERDOWN ", "MASTERDOWN ", "BUSY "}

func (o *OutageLog) attrs(key string, kv ...any) []any {
	out := []any{"loop", o.loop}
	if key != "" {
		out = append(out, "route", key)
	}
	return append(out, kv...)
}
