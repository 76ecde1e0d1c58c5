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
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
	// served is closed when Serve has returned, with its error in serveErr.
	served   chan struct{}
	serveErr error
}

// serve runs the server on its listener until Shutdown.
func (s *apiServer) serve() {
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
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
			Handler:           APIHandler(in, APIOptions{Token: cfg.APIToken, ReadOnly: cfg.APIReadOnly, Logger: log, MetricsNeedToken: cfg.MetricsAddr != ""}),
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
		log.Info("bananas: HTTP API listening on every interface (API_TOKEN is set)", "url", url+"/api/v1/", "dashboard", url+"/", "metrics", url+"/metrics")
		if cfg.MetricsAddr == "" {
			log.Warn("bananas: /metrics is served without the token on every interface; set METRICS_PORT to serve it on a listener of its own, and this port's /metrics then asks for the token", "metrics", url+"/metrics")
		}
	} else {
		log.Info("bananas: HTTP API listening on loopback only; set API_TOKEN to serve other hosts", "url", url+"/api/v1/", "dashboard", url+"/", "metrics", url+"/metrics")
	}
	s.serve()
	return s, nil
}

// startMetrics serves GET /metrics of in alone on cfg.MetricsAddr
// (METRICS_PORT), without the token: for a scraper on a network the operator
// chose by the address, while the API's port keeps /metrics behind the token.
func startMetrics(cfg *Config, in *Inspector, log *slog.Logger) (*apiServer, error) {
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("METRICS_PORT=%s: %w", cfg.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", in.c.MetricsHandler())
	s := &apiServer{
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
	s.serve()
	return s, nil
}

// startListeners starts the API on cfg.APIPort when apiOn, and the metrics
// listener when METRICS_PORT is set; stop shuts down what was started, and
// failed receives the error of a listener that stopped serving.
func startListeners(cfg *Config, in *Inspector, log *slog.Logger, apiOn bool) (stop func(), failed <-chan error, err error) {
	var started []*apiServer
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
		start func(*Config, *Inspector, *slog.Logger) (*apiServer, error)
	}{{apiOn, startAPI}, {cfg.MetricsAddr != "", startMetrics}} {
		if !on.want {
			continue
		}
		s, err := on.start(cfg, in, log)
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
func (s *apiServer) URL() string { return "http://" + s.ln.Addr().String() }

// Shutdown stops accepting requests and waits up to 5 s for those in flight.
func (s *apiServer) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.served
	if err == nil {
		err = s.serveErr
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
	stop, failed, err := startListeners(cfg, NewInspector(c, a.register...), log, true)
	if err != nil {
		return cli.Usage(err)
	}
	defer stop()
	select {
	case <-e.Ctx.Done():
		return nil
	case err := <-failed:
		return err // Serve failed
	}
}
