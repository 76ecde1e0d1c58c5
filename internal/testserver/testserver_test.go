package testserver

import (
	"errors"
	"testing"
)

type server struct{ closed int }

func (s *server) Close() { s.closed++ }

// A private server is closed when its test ends.
func TestPrivate_ClosedWhenTheTestEnds(t *testing.T) {
	var s *server
	t.Run("test", func(t *testing.T) {
		s = Private(t, func() (*server, error) { return &server{}, nil })
		if s.closed != 0 {
			t.Fatal("closed before its test ended")
		}
	})
	if s.closed != 1 {
		t.Fatalf("closed %d times once its test ended; want 1", s.closed)
	}
}

// The shared server is started once, on first use, and closed by Close
// only if it was started; one that did not start is tried again.
func TestShared_StartedOnceOnFirstUse(t *testing.T) {
	var o Shared[*server]
	o.Close() // none started: nothing to close
	if _, err := o.get(func() (*server, error) { return nil, errors.New("port taken") }); err == nil || err.Error() != "port taken" {
		t.Fatalf("a server that does not start: %v; want its error", err)
	}
	starts := 0
	start := func() (*server, error) { starts++; return &server{}, nil }
	a, b := o.Get(t, start), o.Get(t, start)
	if a != b || starts != 1 {
		t.Fatalf("two calls: %p and %p, %d starts; want one server started once", a, b, starts)
	}
	o.Close()
	if a.closed != 1 {
		t.Fatalf("closed %d times; want 1", a.closed)
	}
}
