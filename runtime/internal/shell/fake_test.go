package shell

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// testRules stand for the runtime's: a URL is good when it starts with
// redis:// or mem://.
var testRules = Rules{
	JobTimeout: 5 * time.Minute, MaxRetries: 3, ResultTTLSuccess: time.Hour, ResultTTLFailure: 24 * time.Hour,
	CheckRedisURL: func(u string) error {
		if strings.HasPrefix(u, "redis://") || strings.HasPrefix(u, "mem://") {
			return nil
		}
		return errors.New("want redis:// or mem://")
	},
	RedactURL: func(u string) string {
		if at := strings.LastIndex(u, "@"); at >= 0 {
			return "redis://***" + u[at:]
		}
		return u
	},
}

// fakeProgram records the configuration each Connect was given, and
// hands out fakeSessions with its tasks.
type fakeProgram struct {
	mu    sync.Mutex
	tasks []string
	cfgs  []Config
}

func (f *fakeProgram) program() Program {
	return Program{
		Rules:      testRules,
		LogRedisTo: func(*slog.Logger) {},
		Connect: func(_ context.Context, cfg *Config, _ *slog.Logger) (Session, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.cfgs = append(f.cfgs, *cfg)
			return fakeSession{tasks: f.tasks}, nil
		},
	}
}

// connected is the configuration of the last Connect.
func (f *fakeProgram) connected(t *testing.T) Config {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cfgs) == 0 {
		t.Fatal("the program was never connected")
	}
	return f.cfgs[len(f.cfgs)-1]
}

// fakeSession's worker runs until ctx ends; its handlers answer with
// their names.
type fakeSession struct{ tasks []string }

func (s fakeSession) Admin() admin.Admin { return nil }
func (s fakeSession) Tasks() []string    { return s.tasks }
func (s fakeSession) APIHandler(o HandlerOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "api token="+o.Token+" metricsNeedToken="+strconv.FormatBool(o.MetricsNeedToken))
	})
}
func (s fakeSession) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics") })
}
func (s fakeSession) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (s fakeSession) Close() error                  { return nil }

// env is a getenv over pairs of name and value.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// syncBuffer is a buffer a listener's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// run runs args as a command of f's program and returns its exit status and
// output; ctx ends the command.
func run(ctx context.Context, f *fakeProgram, getenv func(string) string, args ...string) (int, string, string) {
	var out, errOut syncBuffer
	code := Run(ctx, args, getenv, &out, &errOut, f.program())
	return code, out.String(), errOut.String()
}

// freePort is a TCP port nothing listens on at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// get polls url until it answers or the deadline passes.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
