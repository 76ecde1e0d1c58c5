package shell

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/access"
)

// Program is package runtime's side of the seam: what the shell needs of
// the runtime and cannot build itself, as it does not import it.
type Program struct {
	// Rules are the configuration's defaults and its check of REDIS_URL.
	Rules Rules
	// Connect connects with cfg's Redis URL and namespace (ctx bounds the
	// connecting only) and prepares a worker of cfg, its tasks registered,
	// logging to log.
	Connect func(ctx context.Context, cfg *Config, log *slog.Logger) (Session, error)
	// LogRedisTo sends the Redis client's own messages to the program's
	// logger.
	LogRedisTo func(*slog.Logger)
}

// Session is one connection of the program, with a worker of the
// configuration it was opened with.
type Session interface {
	// Admin is the admin layer, with the registered tasks.
	Admin() admin.Admin
	// Tasks are the registered task names, sorted.
	Tasks() []string
	// APIHandler serves the HTTP API, the dashboard and /metrics.
	APIHandler(o HandlerOptions) http.Handler
	// MetricsHandler serves the metrics alone.
	MetricsHandler() http.Handler
	// Run runs the worker until ctx ends, then shuts it down gracefully.
	Run(ctx context.Context) error
	// Close closes the connection.
	Close() error
}

// HandlerOptions are the HTTP API's options the configuration sets
// (runtime.APIOptions).
type HandlerOptions struct {
	Token            string
	Tokens           []access.Token
	ReadOnly         bool
	MetricsNeedToken bool
	Logger           *slog.Logger
}
