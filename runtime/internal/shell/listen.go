package shell

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
)

// server is one listener of the process: the HTTP API on API_PORT or the
// metrics on METRICS_PORT, serving until Shutdown.
type server struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
	// served is closed when Serve has returned, with its error in serveErr.
	served   chan struct{}
	serveErr error
}

// serve runs the server on its listener until Shutdown.
func (s *server) serve() {
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
}

// startAPI serves the HTTP API of s on cfg.APIPort. Without API_TOKEN or
// API_TOKENS it
// listens on loopback only: an API that can delete jobs must not be open to
// the network without a token.
func startAPI(cfg *Config, s Session, log *slog.Logger) (*server, error) {
	host := "127.0.0.1"
	if cfg.APIToken != "" || len(cfg.APITokens) > 0 {
		host = ""
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.APIPort)))
	if err != nil {
		return nil, fmt.Errorf("API_PORT=%d: %w", cfg.APIPort, err)
	}
	h := s.APIHandler(HandlerOptions{Token: cfg.APIToken, Tokens: cfg.APITokens, ReadOnly: cfg.APIReadOnly, Logger: log, MetricsNeedToken: cfg.MetricsAddr != ""})
	srv := &server{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       time.Minute,
			WriteTimeout:      api.MaxResultWait + time.Minute, // a result waited for
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		ln: ln, log: log, served: make(chan struct{}),
	}
	url := "http://" + ln.Addr().String()
	if host == "" {
		url = "http://localhost:" + strconv.Itoa(cfg.APIPort)
		log.Info("bananas: HTTP API listening on every interface (API_TOKEN or API_TOKENS is set)", "url", url+"/api/v1/", "dashboard", url+"/", "metrics", url+"/metrics")
		if cfg.MetricsAddr == "" {
			log.Warn("bananas: /metrics is served without the token on every interface; set METRICS_PORT to serve it on a listener of its own, and this port's /metrics then asks for the token", "metrics", url+"/metrics")
		}
	} else {
		log.Info("bananas: HTTP API listening on loopback only; set API_TOKEN to serve other hosts", "url", url+"/api/v1/", "dashboard", url+"/", "metrics", url+"/metrics")
	}
	srv.serve()
	return srv, nil
}

// startMetrics serves GET /metrics of s alone on cfg.MetricsAddr
// (METRICS_PORT), without the token: for a scraper on a network the operator
// chose by the address, while the API's port keeps /metrics behind the token.
func startMetrics(cfg *Config, s Session, log *slog.Logger) (*server, error) {
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("METRICS_PORT=%s: %w", cfg.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.MetricsHandler())
	srv := &server{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       time.Minute,
			WriteTimeout:      time.Minute,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		ln: ln, log: log, served: make(chan struct{}),
	}
	log.Info("bananas: metrics listening without a token (METRICS_PORT)", "url", "http://"+ln.Addr().String()+"/metrics")
	srv.serve()
	return srv, nil
}

// startListeners starts the API on cfg.APIPort when apiOn, and the metrics
// listener when METRICS_PORT is set; stop shuts down what was started, and
// failed receives the error of a listener that stopped serving.
func startListeners(cfg *Config, sess Session, log *slog.Logger, apiOn bool) (stop func(), failed <-chan error, err error) {
	var started []*server
	stop = func() {
		for _, s := range started {
			if err := s.Shutdown(); err != nil {
				log.Warn("bananas: HTTP listener shutdown", "url", s.URL(), "err", err)
			}
		}
	}
	fail := make(chan error, 2)
	for _, on := range []struct {
		want  bool
		start func(*Config, Session, *slog.Logger) (*server, error)
	}{{apiOn, startAPI}, {cfg.MetricsAddr != "", startMetrics}} {
		if !on.want {
			continue
		}
		s, err := on.start(cfg, sess, log)
		if err != nil {
			stop()
			return nil, nil, err
		}
		started = append(started, s)
		go func() {
			<-s.served
			if s.serveErr != nil {
				fail <- s.serveErr
			}
		}()
	}
	return stop, fail, nil
}

// URL is where the server listens.
func (s *server) URL() string { return "http://" + s.ln.Addr().String() }

// Shutdown stops accepting requests and waits up to 5 s for those in flight.
func (s *server) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.served
	if err == nil {
		err = s.serveErr
	}
	return err
}
