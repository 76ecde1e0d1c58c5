package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// TestDemo_PrintedDashboardAnswersWithLiveWorkersWhileItServes runs the
// demo as make demo does and, once it says it is serving, opens the
// dashboard URL it printed: the page answers, and /api/v1/workers lists a
// live worker for each of the demo's routes, so the dashboard shows none of
// them without a worker.
func TestDemo_PrintedDashboardAnswersWithLiveWorkersWhileItServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lines{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, out, time.Hour) }()

	first := out.waitFor(t, done, regexp.MustCompile(`dashboard: (http://\S+/) `))
	serving := out.waitFor(t, done, regexp.MustCompile(`serving: dashboard (http://\S+/) with its workers .* for \S+, until `))
	if first != serving {
		t.Fatalf("the demo printed the dashboard at %s first and serves it at %s", first, serving)
	}

	page := get(t, serving)
	if !strings.Contains(page, "<title>") || strings.Contains(page, ">no worker<") {
		t.Fatalf("GET %s answers a page that is not the dashboard or shows a route without a worker:\n%s", serving, page)
	}
	var workers []admin.Worker
	if err := json.Unmarshal([]byte(get(t, serving+"api/v1/workers")), &workers); err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"email", "default", "images"} {
		if !slices.ContainsFunc(workers, func(w admin.Worker) bool {
			return slices.Contains(w.Routes, route) && time.Since(w.LastBeat) < time.Minute
		}) {
			t.Errorf("no live worker for route %s while the demo serves; workers: %+v", route, workers)
		}
	}

	cancel() // Ctrl-C
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the demo ended with %v after Ctrl-C", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not end within 30s of Ctrl-C")
	}
	if _, err := http.Get(serving); err == nil {
		t.Fatalf("the dashboard still answers after the demo ended")
	}
}

// get returns the body of a GET of url, failing the test on anything but 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return string(body)
}

// lines collects what the demo prints, for the test to wait on.
type lines struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return len(p), nil
}

// waitFor waits until a printed line matches re and returns its first
// group; it fails the test when the demo ends first or after a minute.
func (l *lines) waitFor(t *testing.T, done <-chan error, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		l.mu.Lock()
		m := re.FindStringSubmatch(l.buf.String())
		text := l.buf.String()
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		if m != nil {
			return m[1]
		}
		select {
		case <-changed:
		case err := <-done:
			t.Fatalf("the demo ended (%v) before printing %q:\n%s", err, re, text)
		case <-deadline:
			t.Fatalf("the demo printed no %q within a minute:\n%s", re, text)
		}
	}
}
