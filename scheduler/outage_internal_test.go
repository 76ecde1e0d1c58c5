package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// reply is an error reply of Redis, as go-redis returns one (redis.Error).
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

// A failure that is Redis's answer (a key of the wrong type, a script's
// refusal) does not pass by itself: it is logged each time, not as one
// outage line, but at most once per ErrorLogEvery per key, the next line
// saying how many were left out.
func TestOutageLog_AFailureThatIsRedisAnswerIsLoggedEachTimeRateLimited(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	o := NewOutageLog(slog.New(slog.NewTextHandler(&logs, nil)), "reaper")
	now := time.Unix(1_800_000_000, 0)
	o.now = func() time.Time { return now }
	wrong := fmt.Errorf("reap: %w", reply("WRONGTYPE Operation against a key holding the wrong kind of value"))
	for range 5 {
		o.Failed("a", wrong)
	}
	now = now.Add(ErrorLogEvery)
	o.Failed("a", reply("ERR user_script:12: bananas: cancels set is not a set"))
	out := logs.String()
	if strings.Contains(out, "outage") {
		t.Fatalf("a failure that is Redis's answer was logged as an outage:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "WRONGTYPE") || !strings.Contains(lines[1], "cancels set is not a set") ||
		!strings.Contains(lines[1], "unlogged_failures=4") || !strings.Contains(lines[1], "route=a") {
		t.Fatalf("want the first failure and, %s later, the next with 4 left out:\n%s", ErrorLogEvery, out)
	}
}

// Failures to reach Redis, replies of a server that cannot serve yet
// included, are an outage: logged once when it starts.
func TestOutageLog_ARedisThatCannotServeYetIsAnOutage(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		errors.New("dial tcp 127.0.0.1:1: connect: connection refused"),
		reply("LOADING Redis is loading the dataset in memory"),
		reply("READONLY You can't write against a read only replica."),
		reply("TRYAGAIN Multiple keys request during rehashing of slot"),
		reply("CLUSTERDOWN The cluster is down"),
		reply("MASTERDOWN Link with MASTER is down"),
		reply("BUSY Redis is busy running a script."),
	} {
		var logs bytes.Buffer
		o := NewOutageLog(slog.New(slog.NewTextHandler(&logs, nil)), "heartbeat")
		for range 3 {
			o.Failed("", err)
		}
		if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "outage: heartbeat failing") {
			t.Errorf("%v: %d lines; want one outage line:\n%s", err, n, logs.String())
		}
	}
}
