// Package testserver holds what the packages that start servers for tests
// (redistest, pgtest) share, for tests only: a private server per test,
// closed when the test ends (Private), and one server per test process,
// started on first use and closed once the tests have run (Shared, Main).
// It knows no server: each package passes the function that starts its own.
package testserver

import (
	"os"
	"sync"
	"testing"
)

// Closer is a server: Close stops it and removes what it left, and may be
// called more than once.
type Closer interface{ Close() }

// Private starts a server for one test with start, and closes it when the
// test ends; a server that does not start fails the test.
func Private[S Closer](t testing.TB, start func() (S, error)) S {
	t.Helper()
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Shared is the one server of a kind in a test process. The zero value
// holds none yet.
type Shared[S Closer] struct {
	mu      sync.Mutex
	s       S
	started bool
}

// Get returns the server, started with start on first use. A server that
// does not start fails the test, and the next call tries again.
func (o *Shared[S]) Get(t testing.TB, start func() (S, error)) S {
	t.Helper()
	s, err := o.get(start)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// get is Get's work: the server, or the error of a start that failed.
func (o *Shared[S]) get(start func() (S, error)) (S, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.started {
		s, err := start()
		if err != nil {
			return s, err
		}
		o.s, o.started = s, true
	}
	return o.s, nil
}

// Close closes the server if it was started.
func (o *Shared[S]) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		o.s.Close()
	}
}

// Main runs the tests, closes the shared servers, and exits with the
// tests' status: the body of a TestMain.
func Main(m *testing.M, shared ...Closer) {
	code := m.Run()
	for _, s := range shared {
		s.Close()
	}
	os.Exit(code)
}
