package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/dial"
	"github.com/bananas-go/bananas/runtime/internal/ext"
	"github.com/bananas-go/bananas/runtime/internal/metrics"
)

// DefaultMaxPayload is the largest args or result accepted unless MaxPayload says otherwise.
const DefaultMaxPayload = 1 << 20

// Defaults that apply where neither the task nor the enqueue says otherwise.
const (
	DefaultMaxRetries = 3
	DefaultTimeout    = 5 * time.Minute
	DefaultResultTTL  = time.Hour
	DefaultFailureTTL = 24 * time.Hour
)

// Client is a connection to a Bananas deployment: a Redis server (or cluster,
// or the embedded server) and a key namespace. It is safe for concurrent use;
// create one per process and Close it at exit.
type Client struct {
	rdb        redis.UniversalClient
	q          *queue.Queue
	listener   *results.Listener
	waiter     *results.Waiter
	maxPayload int
	maxRetries int
	embedded   *dial.Embedded
	stopClock  context.CancelFunc // ends the refresh of Redis's clock (queue.ClockSync)

	unservedAfter time.Duration // how long Await waits before it checks that a live worker takes the job's route

	metrics *metrics.Set // what MetricsHandler serves: this client's enqueues, its workers' runs, the queues' depths

	hooks hooks // the subscribers to its enqueues and its workers' runs and ends (hookreg.go)

	// payloads packs and unpacks stored args, results and notes (keys.go):
	// a field, not an extension, because every enqueue and every run reads it.
	payloads *queue.Payloads

	// ext keeps the state of the features that need some per client (the
	// task history, Once's timings, the runner of workflows), each under a
	// key of its own file: a feature adds no field here.
	ext ext.Registry
}

// ConnectOption adjusts Connect.
type ConnectOption func(*connectConfig)

type connectConfig struct {
	namespace  string
	maxPayload int
	maxRetries int
	localClock func() time.Time // the host's wall clock; a skewed or stepped one in tests
	replicas   int
	replicaTO  time.Duration
	setups     []func(*Client) // what options of features do to the client once it is made (WithHistory)
	payloads   payloadConfig   // compression and keys (keys.go)
}

// WithNamespace puts every key under ns instead of $BANANAS_NAMESPACE (or "bananas").
func WithNamespace(ns string) ConnectOption { return func(c *connectConfig) { c.namespace = ns } }

// MaxPayload sets the largest encoded args or result, in bytes (default 1 MiB).
func MaxPayload(n int) ConnectOption { return func(c *connectConfig) { c.maxPayload = n } }

// DefaultRetries sets the retries of jobs whose task and enqueue do not say (default 3).
func DefaultRetries(n int) ConnectOption { return func(c *connectConfig) { c.maxRetries = n } }

// WaitForReplicas makes every enqueue through this client return only once n
// replicas of the route's master have the job (Redis WAIT), and fail with an
// error matching ErrNotReplicated when fewer acknowledge it within timeout
// (at most 2s). Redis replicates asynchronously: without this, a job
// acknowledged to its producer is lost if its master dies before the replica
// that takes over has it. The cost is a replication round trip per enqueue
// call (coalesced enqueues share one); docs/OPERATIONS.md has the figures.
func WaitForReplicas(n int, timeout time.Duration) ConnectOption {
	return func(c *connectConfig) { c.replicas, c.replicaTO = n, timeout }
}

// ErrNotReplicated matches the error of an enqueue that Redis stored but that
// fewer replicas than WaitForReplicas asks for acknowledged in time.
var ErrNotReplicated = queue.ErrNotReplicated

// Connect opens a client for url:
//
//	redis://[user:pass@]host:port[/db]      a Redis server
//	rediss://...                            the same over TLS
//	redis+cluster://[user:pass@]h1:p1,h2:p2 a Redis Cluster (seed nodes)
//	rediss+cluster://...                    the same over TLS
//	mem://                                  an embedded in-process server (miniredis)
//
// Over TLS, the query parameters tls_ca_file, tls_cert_file, tls_key_file
// and tls_server_name name a private CA, a client certificate and its key,
// and the name the server's certificate must carry (docs/OPERATIONS.md).
// It checks the server answers before it returns.
//
// go-redis's own log lines (a failed dial, a dropped connection) go, for
// the whole process, to slog.Default() — or, under Main, to the logger that
// LOG_LEVEL and LOG_FORMAT configure — from the first Connect on.
func Connect(ctx context.Context, url string, opts ...ConnectOption) (*Client, error) {
	cfg := connectConfig{namespace: os.Getenv("BANANAS_NAMESPACE"), maxPayload: DefaultMaxPayload, maxRetries: DefaultMaxRetries}
	if cfg.namespace == "" {
		cfg.namespace = "bananas"
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxPayload <= 0 {
		return nil, fmt.Errorf("bananas: MaxPayload must be positive, got %d", cfg.maxPayload)
	}
	if cfg.maxRetries < 0 {
		return nil, fmt.Errorf("bananas: DefaultRetries must be >= 0, got %d", cfg.maxRetries)
	}
	payloads, err := cfg.payloads.make(cfg.maxPayload, os.Getenv)
	if err != nil {
		return nil, err
	}
	rdb, emb, err := dial.Open(url)
	if err != nil {
		return nil, err
	}
	dial.FollowTopology(rdb)
	q, err := queue.New(rdb, cfg.namespace)
	if err != nil {
		_ = rdb.Close()
		emb.Close()
		return nil, fmt.Errorf("bananas: %w", err)
	}
	if cfg.localClock != nil {
		q.UseLocalClock(cfg.localClock)
	}
	if err := q.WaitForReplicas(cfg.replicas, cfg.replicaTO); err != nil {
		_ = rdb.Close()
		emb.Close()
		return nil, fmt.Errorf("bananas: WaitForReplicas: %w", err)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		emb.Close()
		return nil, fmt.Errorf("bananas: connect %s: %w", dial.Redact(url), err)
	}
	if err := q.SyncClock(ctx); err != nil {
		_ = rdb.Close()
		emb.Close()
		return nil, fmt.Errorf("bananas: connect %s: %w", dial.Redact(url), err)
	}
	// Read on first use when this fails (see queue.ShardCount).
	_ = q.LoadShards(ctx)
	l := results.NewListener(rdb)
	clockCtx, stopClock := context.WithCancel(context.Background())
	go (&queue.ClockSync{Queue: q}).Run(clockCtx)
	c := &Client{
		rdb: rdb, q: q, listener: l, waiter: results.NewWaiter(l, func(id string) string { return queue.ResultChannel(cfg.namespace, id) }, 0),
		maxPayload: cfg.maxPayload, maxRetries: cfg.maxRetries, embedded: emb, stopClock: stopClock,
		unservedAfter: defaultUnservedAfter, metrics: newMetrics(q), payloads: payloads,
	}
	for _, setup := range cfg.setups {
		setup(c)
	}
	c.hooks.add(countEnds{c.metrics}, true) // the metrics count every end of its workers' runs
	return c, nil
}

// Close releases the client's connections (and stops the embedded server).
func (c *Client) Close() error {
	c.stopClock()
	c.q.WaitBackground() // an enqueue's note of its route, in flight: not cut off by the close
	err := errors.Join(c.listener.Close(), c.rdb.Close())
	c.embedded.Close()
	return err
}

// Namespace returns the key prefix the client works under.
func (c *Client) Namespace() string { return c.q.Namespace() }

// Redis returns the underlying go-redis client (for inspection and tests).
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

var defaultClient atomic.Pointer[Client]

// SetDefault makes c the client of every Task not bound by With.
func SetDefault(c *Client) { defaultClient.Store(c) }

// Default returns the client set by SetDefault, or nil.
func Default() *Client { return defaultClient.Load() }

// redisAddr is the address of c's Redis as an operator reads it (see
// dial.Addr).
func (c *Client) redisAddr() string { return dial.Addr(c.rdb, c.embedded) }

// EmbeddedURL returns the redis:// address of the embedded server behind a
// mem:// client, so other processes can share it, or "" for other clients.
func (c *Client) EmbeddedURL() string {
	if c.embedded == nil {
		return ""
	}
	return "redis://" + c.embedded.Addr()
}

// MetricsHandler serves this client's metrics in the Prometheus formats:
// the jobs its tasks enqueued, the runs of its workers (outcomes, run and
// wait times, running jobs and slots), and the depths of every route's
// queues, read from Redis when scraped (docs/METRICS.md lists them all). The
// HTTP API mounts it at /metrics.
func (c *Client) MetricsHandler() http.Handler { return c.metrics.Handler() }

// QueueDepthMetrics turns the queue gauges of MetricsHandler (bananas_queue_*,
// bananas_route_paused) on, the default, or off. They are the same numbers
// read by every process from the same Redis: a deployment that would rather
// not read them once per process and scrape may keep them on one process
// only (docs/METRICS.md).
func (c *Client) QueueDepthMetrics(on bool) {
	var f metrics.DepthFunc
	if on {
		f = depthReader(c.q)
	}
	c.metrics.ReadDepths(f)
}

// defaultUnservedAfter is how long an Await or Call waits before it looks
// whether any live worker takes its job's route: long enough for a job that
// is merely queued behind others to start, short enough that a job nobody
// will ever run is pointed out while someone is looking.
const defaultUnservedAfter = 10 * time.Second
