package faultproxy_test

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/faultproxy"
)

// quiet is how long a check that nothing arrives waits: a read deadline, so a
// byte that does arrive fails the check at once.
const quiet = 300 * time.Millisecond

// within bounds every wait for something that must happen.
const within = 5 * time.Second

// server listens on a free loopback port and hands each accepted connection
// to the test; with echo set it also echoes everything back.
func server(t *testing.T, echo bool) (addr string, conns <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 64)
	var mu sync.Mutex
	var all []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			all = append(all, c)
			mu.Unlock()
			if echo {
				go func() { _, _ = io.Copy(c, c) }()
			}
			select {
			case ch <- c:
			default: // a test that does not look at the server's side
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range all {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), ch
}

// accepted returns the server's side of the next connection the proxy dialed.
func accepted(t *testing.T, srv <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-srv:
		return c
	case <-time.After(within):
		t.Fatal("the proxy did not connect to the server")
		return nil
	}
}

func start(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, within)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, s string) {
	t.Helper()
	_ = c.SetWriteDeadline(time.Now().Add(within))
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

// expect reads exactly want from c, failing after within.
func expect(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read %q: got %q, %v", want, got, err)
	}
	if string(got) != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// expectSilence fails if c delivers a byte or its end within quiet.
func expectSilence(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(quiet))
	var b [64]byte
	n, err := c.Read(b[:])
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %q, %v during the hang; want nothing", what, b[:n], err)
	}
}

// expectClosed fails unless c ends (EOF or reset) within within, with no
// data before the end.
func expectClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	var b [64]byte
	n, err := c.Read(b[:])
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %q, %v; want the connection closed", what, b[:n], err)
	}
}

func TestProxy_ForwardsBytesBothWays(t *testing.T) {
	addr, _ := server(t, true)
	p := start(t, addr)
	a, b := dial(t, p.Addr()), dial(t, p.Addr())
	send(t, a, "hello")
	send(t, b, "world")
	expect(t, a, "hello")
	expect(t, b, "world")
	big := string(make([]byte, 1<<20)) // more than one chunk and than the socket buffers
	go func() { _, _ = a.Write([]byte(big)) }()
	expect(t, a, big)
}

func TestCut_ClosesEveryConnectionAndLetsNewOnesThrough(t *testing.T) {
	addr, srv := server(t, false)
	p := start(t, addr)
	a, b := dial(t, p.Addr()), dial(t, p.Addr())
	sa, sb := accepted(t, srv), accepted(t, srv)
	p.Cut()
	expectClosed(t, a, "client a")
	expectClosed(t, b, "client b")
	expectClosed(t, sa, "server side of a")
	expectClosed(t, sb, "server side of b")

	c := dial(t, p.Addr())
	sc := accepted(t, srv)
	send(t, c, "after")
	expect(t, sc, "after")
}

func TestCutFor_RefusesNewConnectionsUntilItEnds(t *testing.T) {
	addr, _ := server(t, true)
	p := start(t, addr)
	a := dial(t, p.Addr())
	const refuse = 500 * time.Millisecond
	began := time.Now()
	p.CutFor(refuse)
	expectClosed(t, a, "open connection")
	// The listener still accepts, and resets at once: the dial or the first read fails.
	if b, err := net.DialTimeout("tcp", p.Addr(), within); err == nil {
		expectClosed(t, b, "connection dialed during the refusal")
		_ = b.Close()
	}

	// Each try fails at once while refused (dial, write or read reset), so
	// this loop spins only as long as the refusal lasts.
	echoes := func() error {
		c, err := net.DialTimeout("tcp", p.Addr(), within)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(within))
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
		_, err = io.ReadFull(c, make([]byte, 1))
		return err
	}
	deadline := time.Now().Add(within)
	for {
		err := echoes()
		if err == nil {
			if since := time.Since(began); since < refuse {
				t.Fatalf("a connection went through %s after CutFor(%s)", since, refuse)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections still refused %s after CutFor(%s): %v", time.Since(began), refuse, err)
		}
	}
}

func TestHang_HoldsBytesBothWaysUntilResumeThenDeliversThemInOrder(t *testing.T) {
	addr, srv := server(t, false)
	p := start(t, addr)
	c := dial(t, p.Addr())
	s := accepted(t, srv)
	send(t, c, "ping")
	expect(t, s, "ping")

	p.Hang()
	send(t, c, "abc")
	send(t, s, "xyz")
	expectSilence(t, s, "server")
	expectSilence(t, c, "client")
	send(t, c, "def")
	send(t, s, "uvw")

	p.Resume()
	expect(t, s, "abcdef")
	expect(t, c, "xyzuvw")
}

func TestHang_AcceptsNewConnectionsButKeepsThemSilent(t *testing.T) {
	addr, srv := server(t, false)
	p := start(t, addr)
	p.Hang()
	c := dial(t, p.Addr())
	send(t, c, "early")
	s := accepted(t, srv)
	expectSilence(t, s, "server")
	p.Resume()
	expect(t, s, "early")
}

// A client that gives up on a hung connection closes it; the server must not
// learn of it before the hang ends, and then only after the bytes sent before.
func TestHang_HoldsAClosedConnectionsEndBehindItsBytes(t *testing.T) {
	addr, srv := server(t, false)
	p := start(t, addr)
	c := dial(t, p.Addr())
	s := accepted(t, srv)
	p.Hang()
	send(t, c, "request")
	_ = c.Close()
	expectSilence(t, s, "server")
	p.Resume()
	expect(t, s, "request")
	_ = s.SetReadDeadline(time.Now().Add(within))
	if n, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the held bytes: read %d, %v; want EOF", n, err)
	}
}

func TestCut_DuringAHangDropsWhatWasHeld(t *testing.T) {
	addr, srv := server(t, false)
	p := start(t, addr)
	c := dial(t, p.Addr())
	s := accepted(t, srv)
	p.Hang()
	send(t, c, "lost")
	p.Cut()
	expectClosed(t, s, "server")
	expectClosed(t, c, "client")
	p.Resume()
}

func TestClose_EndsEveryConnectionAndTheListener(t *testing.T) {
	addr, srv := server(t, false)
	p := start(t, addr)
	a := dial(t, p.Addr())
	sa := accepted(t, srv)
	b := dial(t, p.Addr())
	accepted(t, srv)
	p.Hang() // Close must not wait for a hang to end
	send(t, b, "held")
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	expectClosed(t, a, "client a")
	expectClosed(t, sa, "server side of a")
	expectClosed(t, b, "client b")
	if c, err := net.DialTimeout("tcp", p.Addr(), within); err == nil {
		_ = c.Close()
		t.Fatal("the proxy still accepts after Close")
	}
}

// With a delay, a round trip through an echo server takes at least the
// delay each way, and bytes still arrive in order; Delay(0) ends it.
func TestDelay_EachDirectionArrivesLateAndInOrder(t *testing.T) {
	t.Parallel()
	addr, _ := server(t, true)
	p := start(t, addr)
	c := dial(t, p.Addr())
	const d = 150 * time.Millisecond
	p.Delay(d)
	began := time.Now()
	send(t, c, "one")
	send(t, c, "two")
	expect(t, c, "onetwo")
	if rtt := time.Since(began); rtt < 2*d {
		t.Fatalf("round trip through a %s delay each way took %s", d, rtt)
	}
	p.Delay(0)
	began = time.Now()
	send(t, c, "fast")
	expect(t, c, "fast")
	if rtt := time.Since(began); rtt >= d {
		t.Fatalf("round trip after Delay(0) took %s", rtt)
	}
}
