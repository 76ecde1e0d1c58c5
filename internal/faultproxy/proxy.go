// Package faultproxy is a loopback TCP proxy that tests put between a client
// and a server to break the network between them on purpose, without root or
// iptables: Cut drops every connection at once (CutFor also refuses new ones
// for a while), Hang keeps every connection open but silent until Resume,
// which delivers what was held, and Delay makes every byte arrive late.
//
// # What it owns, and what it must not know
//
// A Proxy owns its listener on 127.0.0.1, the connections accepted there, the
// connection it dials to the target for each of them, and the goroutines that
// copy bytes between the two. It knows nothing of what flows through it — no
// protocol, no Redis, no notion of a request: it copies bytes, and a fault
// applies to every connection alike. Tests decide when to break things and
// what the client must make of it.
package faultproxy

import (
	"errors"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds the dial to the target for each accepted connection.
const dialTimeout = 5 * time.Second

// Proxy forwards every connection accepted on Addr to the target address.
// Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and every pump

	mu          sync.Mutex
	cond        *sync.Cond // broadcast when held, writing, a link's dead or closed changes
	links       map[*link]struct{}
	held        bool          // Hang: pumps wait before delivering anything
	delay       time.Duration // Delay: how long after it was read a chunk is delivered
	writing     int           // pumps delivering a chunk now: Hang waits for them
	refuseUntil time.Time     // CutFor: connections accepted before this are reset
	cuts        int           // Cuts so far: a connection accepted before a Cut is cut too
	closed      bool
}

// link is one proxied connection: the client's side and the target's.
type link struct {
	client, server net.Conn
	dead           bool // closed: its pumps drop what they hold and return
}

// New starts a proxy on a free port of 127.0.0.1 that forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, links: map[*link]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the host:port clients dial instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection, both sides at once, dropping whatever a
// hang was holding for them. New connections are forwarded as before.
func (p *Proxy) Cut() { p.CutFor(0) }

// CutFor cuts every open connection like Cut, and for d afterwards resets
// every new connection as soon as it is accepted: the client sees its dial
// succeed and then the connection reset, as when the server's host is gone.
func (p *Proxy) CutFor(d time.Duration) {
	p.mu.Lock()
	p.refuseUntil = time.Now().Add(d)
	p.cuts++
	links := p.takeLinks()
	p.mu.Unlock()
	closeLinks(links)
}

// Hang stops delivering bytes in both directions while keeping every
// connection open: what either side sends is held, in order, not dropped, and
// so is a side's closing of its connection. Connections accepted during the
// hang are dialed through but equally silent. Hang returns once no chunk is
// being delivered, so nothing sent after it returns arrives before Resume.
func (p *Proxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
	for p.writing > 0 {
		p.cond.Wait()
	}
}

// Delay makes every chunk either side sends arrive d after it was read, in
// order, as on a slow link (each direction pays d: a request and its reply
// 2d); 0 ends it. Chunks already read keep the delay they were read under.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Resume ends a hang: what was held is delivered, in the order it was sent.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.held = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close stops accepting, closes every connection and returns once every
// goroutine of the proxy has returned.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	links := p.takeLinks()
	p.mu.Unlock()
	err := p.ln.Close()
	closeLinks(links)
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a failed accept (out of descriptors) spoils no other connection
		}
		p.mu.Lock()
		closed, refuse, cuts := p.closed, time.Now().Before(p.refuseUntil), p.cuts
		p.mu.Unlock()
		switch {
		case closed:
			_ = c.Close()
			return
		case refuse:
			reset(c)
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, dialTimeout)
		if err != nil {
			reset(c)
			continue
		}
		l := &link{client: c, server: s}
		p.mu.Lock()
		if p.closed || p.cuts != cuts { // cut or closed while dialing
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			continue
		}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pump(l, c, s) })
		p.wg.Go(func() { p.pump(l, s, c) })
	}
}

// pump copies src to dst for l until either ends. What it read — bytes, and
// the end of src — waits out a hang before it is delivered, so that a hang
// also hides a side's closing of its connection from the other.
func (p *Proxy) pump(l *link, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		p.mu.Lock()
		delay := p.delay
		p.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay) // the link's latency; a cut meanwhile fails the write below
		}
		if !p.pass(l) {
			return
		}
		var werr error
		if n > 0 {
			_, werr = dst.Write(buf[:n])
		}
		p.mu.Lock()
		p.writing--
		if p.writing == 0 {
			p.cond.Broadcast()
		}
		p.mu.Unlock()
		if rerr != nil || werr != nil {
			p.drop(l)
			return
		}
	}
}

// pass waits while the proxy hangs, then counts the caller as writing. It
// reports false, counting nothing, when l was closed meanwhile.
func (p *Proxy) pass(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.held && !l.dead {
		p.cond.Wait()
	}
	if l.dead {
		return false
	}
	p.writing++
	return true
}

// drop closes l, both sides: one side ended, so the other is ended too.
func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	if l.dead {
		p.mu.Unlock()
		return
	}
	l.dead = true
	delete(p.links, l)
	p.cond.Broadcast()
	p.mu.Unlock()
	_ = l.client.Close()
	_ = l.server.Close()
}

// takeLinks marks every link dead and hands them over to be closed. p.mu is held.
func (p *Proxy) takeLinks() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		l.dead = true
		links = append(links, l)
	}
	clear(p.links)
	p.cond.Broadcast()
	return links
}

func closeLinks(links []*link) {
	for _, l := range links {
		_ = l.client.Close()
		_ = l.server.Close()
	}
}

// reset closes c with a TCP reset rather than an orderly close, so the client
// sees a failure and not an empty answer.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
