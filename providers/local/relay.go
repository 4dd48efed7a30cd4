package local

// A relay sits between a proxy and one server port on every path between two servers. It does
// two things a proxy alone cannot:
//
//   - A proxy accepts a connection before it dials the server behind it. A server dialing a peer
//     that has not bound its port yet (a newly elected ZooKeeper leader) would be refused and
//     retry; through a proxy it is accepted, then closed, which it may take for a failed peer
//     (ZooKeeper followers then go back to electing while the leader waits initLimit ticks for
//     them: 5 s lost, observed). For a port with WaitForBind the relay keeps dialing a refusing
//     port that long, as the server would have; for others it closes at once, as a refusal would.
//   - Some protocols announce the sender's own address in their first message and the receiver
//     dials it back (ZooKeeper's election, to the lower id's real port, around every proxy). With
//     the port's Hello function the relay rewrites that address to the proxy through which the
//     receiver must call back.

import (
	"io"
	"net"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/internal/forward"
)

type relay struct {
	fw      *forward.Forwarder
	target  func() string // the server port's current address
	hello   func(r io.Reader, callback string) ([]byte, error)
	dialFor time.Duration // how long to keep dialing a port that refuses

	mu       sync.Mutex
	callback string
}

func newRelay(target func() string, hello func(io.Reader, string) ([]byte, error), dialFor time.Duration) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{target: target, hello: hello, dialFor: dialFor}
	r.fw = forward.Serve(ln, r.handle)
	return r, nil
}

// Addr is where the relay listens.
func (r *relay) Addr() string { return r.fw.Addr().String() }

func (r *relay) setCallback(addr string) {
	r.mu.Lock()
	r.callback = addr
	r.mu.Unlock()
}

// dial connects to the target, retrying a refusal for up to dialFor.
func (r *relay) dial() (net.Conn, error) {
	deadline := time.Now().Add(r.dialFor)
	for {
		up, err := net.DialTimeout("tcp", r.target(), time.Second)
		if err == nil || !time.Now().Before(deadline) || r.fw.Closed() {
			return up, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *relay) handle(f *forward.Forwarder, down net.Conn) {
	up, err := r.dial()
	if err != nil || !f.Track(up) {
		return // the server is down: the caller sees the connection close
	}
	defer f.Untrack(up)
	if r.hello != nil {
		r.mu.Lock()
		callback := r.callback
		r.mu.Unlock()
		_ = down.SetReadDeadline(time.Now().Add(10 * time.Second))
		first, err := r.hello(down, callback)
		if err != nil {
			return
		}
		_ = down.SetReadDeadline(time.Time{})
		if _, err := up.Write(first); err != nil {
			return
		}
	}
	forward.Splice(up, down)
}

// close stops accepting, closes every connection and waits for the relay's goroutines.
func (r *relay) close() { r.fw.Close() }
