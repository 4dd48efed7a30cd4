package etcd

// Peer URLs, and why members may need doorways.
//
// An etcd member is known to every other member by the same peer URLs: they are part of the
// cluster's membership, and a member's id is a hash of them. A provider whose cuts act on the
// nodes themselves (docker: iptables in each container) gives every member the same address for a
// peer, so that address is the peer URL. A provider that cuts paths (local: a proxy on each path
// between two servers) gives each member its own address for the same peer, and no single URL
// can name them all.
//
// etcd dials a unix:// peer URL as a socket path relative to its working folder. So on such a
// provider every member is named unix://<member>:2380 in the membership, and each member runs in
// a folder of its own (peers/ in its node folder) that holds one socket per other member — a
// doorway, served by the harness, which forwards what the member sends to that peer along the
// provider's path from this member to it. Every byte between two members then crosses the path a
// cut acts on: raft traffic, the leader's lease renewals forwarded by followers, version checks.
//
// The choice is made from the Placement alone (are this node's paths to its peers their direct
// addresses?), never from the provider's name; it assumes, as the local provider guarantees, that
// a provider whose paths differ by sender runs its servers where the harness can reach them.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/internal/forward"
)

// peersDir is the member's working folder when it uses doorways, inside its node folder.
const peersDir = "peers"

// doorwayName is the socket file of the doorway to member to: the address a unix://to:2380 URL
// makes etcd dial, relative to its working folder.
func doorwayName(to string) string { return to + ":2380" }

// unixURL is member's peer URL when members use doorways.
func unixURL(member string) string { return "unix://" + doorwayName(member) }

// doorways are every member's doorways to its peers.
type doorways struct {
	mu     sync.Mutex
	open   map[[2]string]*doorway // (from, to)
	closed bool
}

func newDoorways() *doorways { return &doorways{open: map[[2]string]*doorway{}} }

// ensure opens the doorway in hostDir (the member's working folder as the harness sees it) from
// member from to member to, forwarding to target, unless it is open already (a restart).
func (d *doorways) ensure(from, to, hostDir, target string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("etcd doorways: closed")
	}
	if _, ok := d.open[[2]string{from, to}]; ok {
		return nil
	}
	w, err := openDoorway(hostDir, doorwayName(to), target)
	if err != nil {
		return fmt.Errorf("doorway %s -> %s: %w", from, to, err)
	}
	d.open[[2]string{from, to}] = w
	return nil
}

// close closes every doorway and removes its socket file.
func (d *doorways) close() {
	d.mu.Lock()
	d.closed = true
	open := d.open
	d.open = nil
	d.mu.Unlock()
	for _, w := range open {
		w.close()
	}
}

// doorway is one member's socket to one peer.
type doorway struct {
	fw     *forward.Forwarder
	path   string // the socket file, as the harness sees it
	target string // the path's address
}

// maxSocketPath is a little under the 108 bytes a unix socket's path may have on Linux.
const maxSocketPath = 100

// openDoorway listens on dir/name and forwards each connection to target.
func openDoorway(dir, name, target string) (*doorway, error) {
	path := filepath.Join(dir, name)
	_ = os.Remove(path) // left by a harness that was killed
	ln, err := listenUnix(dir, name)
	if err != nil {
		return nil, err
	}
	w := &doorway{path: path, target: target}
	w.fw = forward.Serve(ln, w.forward)
	return w, nil
}

// listenUnix binds dir/name. A run folder can be deeper than a socket path may be long: then it
// binds through a short symbolic link to dir, made for the bind and removed after it (the socket
// file lands in dir all the same).
func listenUnix(dir, name string) (net.Listener, error) {
	path := filepath.Join(dir, name)
	if len(path) <= maxSocketPath {
		return listenUnixAt(path)
	}
	tmp, err := os.MkdirTemp("", "lcetcd")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	link := filepath.Join(tmp, "d")
	if err := os.Symlink(dir, link); err != nil {
		return nil, err
	}
	if p := filepath.Join(link, name); len(p) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s too long even through %s", path, p)
	}
	return listenUnixAt(filepath.Join(link, name))
}

func listenUnixAt(path string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// The file is removed by close, by its real path (the bind may have gone through a link).
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return ln, nil
}

// forward connects the member's connection to the path. A path that refuses (cut, or the peer
// down) closes the member's connection at once, as a refused dial would.
func (w *doorway) forward(f *forward.Forwarder, down net.Conn) {
	up, err := net.DialTimeout("tcp", w.target, time.Second)
	if err != nil || !f.Track(up) {
		return
	}
	defer f.Untrack(up)
	forward.Splice(up, down)
}

func (w *doorway) close() {
	w.fw.Close()
	_ = os.Remove(w.path)
}
