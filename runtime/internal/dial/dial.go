// Package dial opens the Redis connections of the runtime: it reads a
// connection URL (redis://, rediss://, redis+cluster://, rediss+cluster://,
// mem://) with its TLS parameters, checks it without connecting, hides its
// password in messages, starts the embedded server behind mem://, makes a
// cluster client follow a failover at once (FollowTopology), and sends
// go-redis's own log lines to the program's logger. It knows go-redis and
// miniredis, and nothing of queues or tasks.
package dial

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open turns a connection URL into a go-redis client (and, for mem://, the
// embedded server it talks to). Every client honours its callers' context
// deadlines on the socket (go-redis's ContextTimeoutEnabled), so a call
// returns when its context ends even while the network is silent; without
// it go-redis waits out its own read timeout, and each of its retries,
// first. The engine's calls carry timeouts of their own, longer than a read's.
func Open(raw string) (redis.UniversalClient, *Embedded, error) {
	installRedisLogger.Do(func() { redis.SetLogger(GoRedisLogger{}) })
	if err := Check(raw); err != nil {
		return nil, nil, fmt.Errorf("bananas: invalid Redis URL %q: %w", Redact(raw), err)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, nil, fmt.Errorf("bananas: invalid Redis URL %q: want redis://, rediss://, redis+cluster://, rediss+cluster:// or mem://", Redact(raw))
	}
	switch scheme {
	case "redis", "rediss":
		opt, err := parseServerURL(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("bananas: invalid Redis URL %q: %w", Redact(raw), err)
		}
		if !strings.Contains(raw, "protocol=") {
			// RESP2 unless asked otherwise: with RESP3, go-redis peeks every
			// connection for push notifications before each command, which
			// cost about 6% of a producer's CPU in the enqueue profile; the
			// runtime uses no RESP3 feature.
			opt.Protocol = 2
		}
		opt.ContextTimeoutEnabled = true // see Open
		return redis.NewClient(opt), nil, nil
	case "redis+cluster", "rediss+cluster":
		opt, err := parseClusterURL(scheme, rest)
		if err != nil {
			return nil, nil, fmt.Errorf("bananas: invalid Redis URL %q: %w", Redact(raw), err)
		}
		return redis.NewClusterClient(opt), nil, nil
	case "mem":
		emb, err := startEmbedded()
		if err != nil {
			return nil, nil, err
		}
		return redis.NewClient(&redis.Options{Addr: emb.Addr(), ContextTimeoutEnabled: true}), emb, nil
	default:
		return nil, nil, fmt.Errorf("bananas: invalid Redis URL %q: unknown scheme %q, want redis, rediss, redis+cluster, rediss+cluster or mem", Redact(raw), scheme)
	}
}

// Check reports what is wrong with a connection URL, without
// connecting: its scheme, for servers their host:port, and the TLS files it
// names (read, so that a missing CA file is a configuration error at start).
func Check(raw string) error {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return fmt.Errorf("want redis://host:port, rediss://..., redis+cluster://h1:p1,h2:p2, rediss+cluster://... or mem://")
	}
	switch scheme {
	case "redis", "rediss":
		opt, err := parseServerURL(raw)
		if err != nil {
			return err
		}
		return checkAddr(opt.Addr)
	case "redis+cluster", "rediss+cluster":
		opt, err := parseClusterURL(scheme, rest)
		if err != nil {
			return err
		}
		for _, a := range opt.Addrs {
			if err := checkAddr(a); err != nil {
				return err
			}
		}
		return nil
	case "mem":
		return nil
	default:
		return fmt.Errorf("unknown scheme %q, want redis, rediss, redis+cluster, rediss+cluster or mem", scheme)
	}
}

// checkAddr checks a host:port: a port from 1 to 65535.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %v", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("address %q: the port must be a number from 1 to 65535", addr)
	}
	return nil
}

// parseClusterURL reads the "[user:pass@]h1:p1,h2:p2[?tls_...]" after
// scheme:// (redis+cluster, or rediss+cluster for TLS).
func parseClusterURL(scheme, rest string) (*redis.ClusterOptions, error) {
	hosts, query, _ := strings.Cut(rest, "?")
	tlsConfig, err := clusterTLS(scheme, query)
	if err != nil {
		return nil, err
	}
	opt := &redis.ClusterOptions{
		// One dial per attempt: a node that refuses is down, and the
		// cluster client's own retries, after the map reload a failed dial
		// starts (followTopology), reach the node that took its slots;
		// go-redis's five dials 100 ms apart would hold every call to the
		// dead node for half a second first.
		DialerRetries: 1,
		// The map is also reloaded on this interval (go-redis: 60 s), for
		// changes no failed call reveals, such as a replica added.
		ClusterStateReloadInterval: 5 * time.Second,
		ContextTimeoutEnabled:      true, // see Open
	}
	if at := strings.LastIndex(hosts, "@"); at >= 0 {
		u, err := url.Parse("redis://" + hosts[:at+1] + "x")
		if err != nil {
			return nil, withoutURL(err)
		}
		opt.Username = u.User.Username()
		opt.Password, _ = u.User.Password()
		hosts = hosts[at+1:]
	}
	for _, h := range strings.Split(strings.TrimSuffix(hosts, "/"), ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if !strings.Contains(h, ":") {
			return nil, fmt.Errorf("cluster node %q has no port", h)
		}
		opt.Addrs = append(opt.Addrs, h)
	}
	if len(opt.Addrs) == 0 {
		return nil, fmt.Errorf("no cluster nodes")
	}
	opt.TLSConfig = tlsConfig
	return opt, nil
}

// Redact hides a password in a URL shown in an error.
func Redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return raw
	}
	return scheme + "://" + user + ":***@" + rest[at+1:]
}

// go-redis writes its own messages (a failed dial, a connection dropped
// with unread data) through one logger for the whole process, by default
// to stderr in a format of its own. The first client dialed installs
// GoRedisLogger in its place: those messages then go to the program's slog
// logger — the one Main configured (LOG_LEVEL, LOG_FORMAT), or else
// slog.Default() at the time of each message — as lines like the
// runtime's. It is process-wide, as go-redis's logger is: a program that
// runs several Main configurations at once logs go-redis's lines with the
// last one's logger.
var (
	installRedisLogger sync.Once
	redisLogTo         atomic.Pointer[slog.Logger] // nil: slog.Default()
)

// LogTo sends go-redis's messages to l (see GoRedisLogger).
func LogTo(l *slog.Logger) { redisLogTo.Store(l) }

// GoRedisLogger is go-redis's logger, writing to the program's.
type GoRedisLogger struct{}

// Printf logs one line of go-redis's.
func (GoRedisLogger) Printf(ctx context.Context, format string, v ...any) {
	l := redisLogTo.Load()
	if l == nil {
		l = slog.Default()
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	// A failed dial is also the error of the call that needed the
	// connection: that caller reports it (a command its error, a
	// background loop an outage, once), so go-redis's own line about it is
	// detail.
	//
	// "Unexpected conn[N] state changed by hook to CLOSED" is a connection
	// handed back to a pool that was closed while it was out: Close of a
	// go-redis client marks every connection closed, those in use included,
	// and the call that held one finds it so when it gives it back. The
	// call itself got its answer; nothing is lost, and nothing is to do.
	level := slog.LevelWarn
	if strings.Contains(msg, "failed to dial") || strings.Contains(msg, "failed to get a usable connection") ||
		strings.Contains(msg, "state changed by hook to CLOSED") {
		level = slog.LevelDebug
	}
	if ctx == nil {
		ctx = context.Background()
	}
	l.Log(ctx, level, "bananas: go-redis: "+msg)
}

// Addr is the address of rdb's Redis as an operator reads it, when the
// surfaces say it is unreachable: host:port, a cluster's seed nodes, or
// mem:// for the embedded server emb. It is read from go-redis's options,
// which hold no credentials in the address.
func Addr(rdb redis.UniversalClient, emb *Embedded) string {
	if emb != nil {
		return "mem://"
	}
	switch r := rdb.(type) {
	case *redis.Client:
		return r.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(r.Options().Addrs, ",")
	}
	return ""
}
