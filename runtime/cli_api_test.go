package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
)

// `app api` serves the HTTP API on API_PORT. Without API_TOKEN it listens on
// loopback only and says so; with one it listens on every interface and
// every /api call needs the token.
func TestCLI_APIListensOnLoopbackOnlyWithoutAToken(t *testing.T) {
	t.Parallel()
	external := externalIP()
	for _, token := range []string{"", "s3cret"} {
		port := freeTCPPort(t)
		a := newApp(t).with("API_PORT", fmt.Sprint(port), "API_TOKEN", token, "LOG_LEVEL", "info")
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var out bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- runtime.RunCommand(ctx, []string{"api"}, func(k string) string { return a.env[k] }, &lockedWriter{&mu, &out}, &lockedWriter{&mu, &out}, tasks.Register)
		}()
		get := func(host, path string) (int, error) {
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/%s", net.JoinHostPort(host, fmt.Sprint(port)), path), nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}
		waitFor(t, 10*time.Second, "the API to answer", func() bool { st, err := get("127.0.0.1", "healthz"); return err == nil && st == 200 })
		if st, err := get("127.0.0.1", "api/v1/queues"); err != nil || st != 200 {
			t.Fatalf("token %q: GET /api/v1/queues = %d, %v", token, st, err)
		}
		mu.Lock()
		log := out.String()
		mu.Unlock()
		if token == "" && !strings.Contains(log, "loopback only") {
			t.Fatalf("no token, and the log does not say it listens on loopback only:\n%s", log)
		}
		if external != "" {
			_, err := get(external, "healthz")
			if token == "" && err == nil {
				t.Fatalf("no token, yet the API answers on %s", external)
			}
			if token != "" && err != nil {
				t.Fatalf("with a token the API does not answer on %s: %v", external, err)
			}
		}
		cancel()
		if code := recv(t, done, 10*time.Second, "api to stop"); code != 0 {
			t.Fatalf("api exited %d:\n%s", code, out.String())
		}
	}
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// externalIP is a non-loopback IPv4 address of this host, or "".
func externalIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
