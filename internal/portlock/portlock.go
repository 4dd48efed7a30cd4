// Package portlock keeps a 127.0.0.1 TCP port for a process without listening on it.
//
// A Reservation is a socket bound to the port with SO_REUSEADDR but never listening. While it
// exists the kernel gives the port to no outgoing connection and to no bind of port 0, and a
// connection to it is refused, as to a closed port; yet a server that binds the port itself with
// SO_REUSEADDR (redis-server, ZooKeeper, etcd, PostgreSQL, MariaDB and Go's net.Listen all do)
// binds and listens beside it. So a port picked for a server, or a proxy that is cut, stays ours
// between one listener and the next: no ephemeral port of some unrelated connection can take it
// while the server starts, restarts or the proxy is down, which a picked-then-closed port allows.
package portlock

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
)

// Reservation holds one port until Close.
type Reservation struct {
	port int

	mu sync.Mutex
	fd int // -1 once closed
}

// Fresh reserves a port the kernel picks among the free ones.
func Fresh() (*Reservation, error) { return Port(0) }

// Port reserves port on 127.0.0.1 (0: any free port). It fails if a socket that does not allow
// sharing, or a listener, holds the port.
func Port(port int) (*Reservation, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reserve port %d: %w", port, err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("reserve port %d: %w", port, err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("reserve port %d: %w", port, err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("reserve port %d: %w", port, err)
	}
	return &Reservation{port: sa.(*syscall.SockaddrInet4).Port, fd: fd}, nil
}

// Port is the reserved port number.
func (r *Reservation) Port() int { return r.port }

// Addr is 127.0.0.1:port.
func (r *Reservation) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// Close gives the port back. Idempotent.
func (r *Reservation) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return nil
	}
	err := syscall.Close(r.fd)
	r.fd = -1
	return err
}
