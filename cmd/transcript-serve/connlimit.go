package main

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/transcriptstore/transcript/server"
)

// defaultMaxConnections is the default of --max-connections: the server's
// default number of event streams (server.DefaultMaxStreams) and a fifth more
// for other requests (see maxStreamsFor), while the memory the connections
// hold (a goroutine and buffers each, tens of KiB) stays about 100 MiB.
const defaultMaxConnections = server.DefaultMaxStreams * 5 / 4

// maxStreamsFor returns the most event streams a server of maxConns
// connections holds (server.Config.MaxStreams): four fifths of them rounded
// down, at most server.DefaultMaxStreams, at least one. A stream holds its
// connection for as long as it lasts; the fifth left over (rounded up, so at
// least one connection from two on) is for requests and health probes, which
// streams could otherwise crowd out (a stream past the bound is answered 503,
// and its client retries).
func maxStreamsFor(maxConns int) int {
	return max(1, min(server.DefaultMaxStreams, maxConns/5*4+maxConns%5*4/5)) // maxConns*4/5, without overflow
}

// limitListener is a net.Listener that serves at most n connections at once
// (--max-connections), as golang.org/x/net/netutil.LimitListener does, with one
// difference: a keep-alive connection idle between requests gives its slot up
// to a client that waits for one. Past the limit, Accept takes one more
// connection and holds it, unserved, until a served one closes; the others
// wait in the kernel's accept queue (the listen backlog), at no cost to the
// process, and are served in turn. While a connection waits, the idle
// connections are closed (as IdleTimeout would close them later; clients open
// a new one for their next request), so that only requests in progress (event
// streams among them) and connections whose request has not arrived yet
// (closed after the header timeout) make a new client, or a health probe, wait.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	waiting   atomic.Int32 // accepted connections waiting for a slot
	mu        sync.Mutex
	// waitingFor holds the connections without a request in progress, by
	// state: http.StateNew before their first request, http.StateIdle between
	// two. shutting is set once shutdown began (see CloseFresh).
	waitingFor map[*limitConn]http.ConnState
	shutting   bool
}

// newLimitListener returns l serving at most n (more than 0) connections at once.
// Its ConnState must be the http.Server's.
func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{}),
		waitingFor: map[*limitConn]http.ConnState{}}
}

// Accept waits for a connection and then for a slot to serve it in.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
		return &limitConn{Conn: c, l: l}, nil
	default:
	}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	l.closeIdle()
	select {
	case l.slots <- struct{}{}:
		return &limitConn{Conn: c, l: l}, nil
	case <-l.done:
		_ = c.Close()
		return nil, net.ErrClosed
	}
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// ConnState tracks the connections without a request in progress
// (http.Server.ConnState), closes one that goes idle while a connection waits
// for its slot, and one that arrives once shutdown began (CloseFresh).
func (l *limitListener) ConnState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	if st == http.StateNew || st == http.StateIdle {
		l.waitingFor[c] = st
	} else {
		delete(l.waitingFor, c)
	}
	shutting := l.shutting
	l.mu.Unlock()
	if (st == http.StateIdle && l.waiting.Load() > 0) || (st == http.StateNew && shutting) {
		_ = c.Close()
	}
}

// CloseFresh closes the connections that have not begun a request, now and
// from now on (register it with http.Server.RegisterOnShutdown). Shutdown
// closes the connections idle between requests at once, but takes one that
// never sent a byte for idle only after 5 seconds (the net/http rule for
// http.StateNew): a client that connected ahead of its request, a pool's
// spare connection or a load balancer's TCP probe would hold every shutdown
// back that long. No byte of a request was read from such a connection, so
// closing it loses nothing; its client opens another to a running server.
func (l *limitListener) CloseFresh() {
	l.mu.Lock()
	l.shutting = true
	l.mu.Unlock()
	l.closeIn(http.StateNew)
}

// closeIdle closes every connection idle between requests.
func (l *limitListener) closeIdle() { l.closeIn(http.StateIdle) }

// closeIn closes every connection in state st (http.StateNew or StateIdle).
func (l *limitListener) closeIn(st http.ConnState) {
	l.mu.Lock()
	var conns []*limitConn
	for c, in := range l.waitingFor {
		if in == st {
			conns = append(conns, c)
		}
	}
	l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// limitConn is a served connection: closing it frees its slot.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

// Close closes the connection and frees its slot (once).
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.waitingFor, c)
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}
