package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/bananas-go/bananas/runtime/internal/api"
	"github.com/bananas-go/bananas/runtime/internal/cli"
)

// apiServer serves the HTTP API of in on cfg.APIPort until Shutdown. Without
// API_TOKEN it listens on loopback only: an API that can delete jobs must not
// be open to the network without a token.
type apiServer struct {
	srv  *http.Server
	ln   net.Listener
	log  *slog.Logger
	done chan error
}

func startAPI(cfg *Config, in *Inspector, log *slog.Logger) (*apiServer, error) {
	host := "127.0.0.1"
	if cfg.APIToken != "" {
		host = ""
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.APIPort)))
	if err != nil {
		return nil, fmt.Errorf("API_PORT=%d: %w", cfg.APIPort, err)
	}
	s := &apiServer{
		srv: &http.Server{
			Handler:           APIHandler(in, APIOptions{Token: cfg.APIToken, ReadOnly: cfg.APIReadOnly, Logger: log}),
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       time.Minute,
			WriteTimeout:      api.MaxResultWait + time.Minute, // a result waited for
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		ln: ln, log: log, done: make(chan error, 1),
	}
	url := "http://" + ln.Addr().String()
	if host == "" {
		url = "http://localhost:" + strconv.Itoa(cfg.APIPort)
		log.Info("bananas: HTTP API listening on every interface (API_TOKEN is set)", "url", url+"/api/v1/", "metrics", url+"/metrics")
	} else {
		log.Info("bananas: HTTP API listening on loopback only; set API_TOKEN to serve other hosts", "url", url+"/api/v1/", "metrics", url+"/metrics")
	}
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// URL is where the server listens.
func (s *apiServer) URL() string { return "http://" + s.ln.Addr().String() }

// Shutdown stops accepting requests and waits up to 5 s for those in flight.
func (s *apiServer) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serveErr := <-s.done; err == nil {
		err = serveErr
	}
	return err
}

// cmdAPI serves the HTTP API (and /metrics) without running jobs, until
// SIGINT or SIGTERM.
func (a *cliApp) cmdAPI(e *cli.Env, args []string) error {
	parseArgs, cfg := a.workerFlags(e, "[flags]: serve the HTTP API on API_PORT (default 8080) until SIGINT or SIGTERM; runs no jobs")
	if err := parseArgs(args); err != nil {
		return err
	}
	if cfg.APIPort == 0 {
		cfg.APIPort = 8080
	}
	a.cfg = *cfg
	log := a.logger(cfg)
	c, err := a.connect(e.Ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := startAPI(cfg, NewInspector(c, a.register...), log)
	if err != nil {
		return cli.Usage(err)
	}
	select {
	case <-e.Ctx.Done():
		return s.Shutdown()
	case err := <-s.done:
		return err // Serve failed
	}
}
