// Package forward is the accept loop of the harness's own small forwarders (the local provider's
// relays between servers, etcd's doorways between members): accept on a listener, hand each
// connection to its handler, which connects it onward and splices the two, and on Close stop
// accepting, close every connection still open and wait for the handlers.
package forward

import (
	"io"
	"net"
	"sync"
)

// Forwarder serves one listener.
type Forwarder struct {
	ln     net.Listener
	handle func(down net.Conn)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Serve accepts on ln and calls handle with each connection, in a goroutine of its own; the
// connection is closed when handle returns. handle tracks what it opens onward (Track).
func Serve(ln net.Listener, handle func(f *Forwarder, down net.Conn)) *Forwarder {
	f := &Forwarder{ln: ln, conns: map[net.Conn]struct{}{}}
	f.handle = func(down net.Conn) { handle(f, down) }
	f.wg.Add(1)
	go f.serve()
	return f
}

// Addr is where the forwarder listens.
func (f *Forwarder) Addr() net.Addr { return f.ln.Addr() }

func (f *Forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		if !f.Track(c) {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.Untrack(c)
			f.handle(c)
		}()
	}
}

// Track adds c to what Close closes. Once the forwarder is closed it closes c instead and
// reports false.
func (f *Forwarder) Track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

// Untrack closes c and forgets it.
func (f *Forwarder) Untrack(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// Closed reports whether Close was called.
func (f *Forwarder) Closed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Close stops accepting, closes every connection and waits for the handlers.
func (f *Forwarder) Close() {
	f.mu.Lock()
	f.closed = true
	conns := make([]net.Conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	f.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	f.wg.Wait()
}

// Splice copies both ways between a and b until one side ends; that ends the connection, so it
// closes both (which ends the other copy) and returns once both copies have.
func Splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(a, b); done <- struct{}{} }()
	go func() { _, _ = io.Copy(b, a); done <- struct{}{} }()
	<-done
	a.Close()
	b.Close()
	<-done
}
