package redisopt

// A reply hook lets a lock design act at the moment between "the command is on the wire" and "its
// reply is read" (K10: a client frozen there has its replies waiting in the socket buffer while
// the server has already executed the command). go-redis offers no such place — its hooks wrap a
// whole command — so the hook sits in a net.Conn installed through Options.Dialer.

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplyHook is shared by every connection of one client. While armed for a command, the first
// connection that writes that command runs the armed function just before it reads the reply;
// then the hook disarms itself.
type ReplyHook struct {
	mu      sync.Mutex
	command []byte // RESP bulk string of the command's name, e.g. "$3\r\nset\r\n"
	fn      HeldFunc
}

// HeldFunc runs between a command's write and its reply's read. It returns how long it held the
// read back on behalf of others (e.g. waiting until other connections have sent theirs): the
// read's deadline moves by that much, so the wait is not charged to this command's timeout. Time
// the client itself was stopped is not returned: that stall is real and must count.
type HeldFunc func() (heldForOthers time.Duration)

// Arm makes the next write of command (its name, any case: "set") run fn before its reply is read.
// fn runs on the goroutine issuing the command, once. A nil hook (a client dialled without one)
// ignores Arm and Disarm.
func (h *ReplyHook) Arm(command string, fn HeldFunc) {
	if h == nil {
		return
	}
	name := strings.ToLower(command)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.command = []byte("$" + strconv.Itoa(len(name)) + "\r\n" + name + "\r\n")
	h.fn = fn
}

// Disarm cancels an armed function that has not run (the command was never written).
func (h *ReplyHook) Disarm() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.command, h.fn = nil, nil
}

// wrote reports whether p carries the armed command, and if so takes the function to run.
func (h *ReplyHook) wrote(p []byte) HeldFunc {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fn == nil || !commandIs(p, h.command) {
		return nil
	}
	fn := h.fn
	h.command, h.fn = nil, nil
	return fn
}

// commandIs reports whether the RESP request p ("*N\r\n$3\r\nSET\r\n...") names command. go-redis
// writes a request with one Write, and writes other requests too (HELLO on a new connection), so
// the name is what tells the armed command apart.
func commandIs(p, command []byte) bool {
	i := bytes.Index(p, []byte("\r\n"))
	if len(p) == 0 || p[0] != '*' || i < 0 {
		return false
	}
	rest := p[i+2:]
	return len(rest) >= len(command) && bytes.EqualFold(rest[:len(command)], command)
}

// WithReplyHook returns o with a dialer whose connections report to h. It dials as go-redis's
// own dialer does.
func WithReplyHook(o *redis.Options, h *ReplyHook) *redis.Options {
	timeout := o.DialTimeout
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout, KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second}}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &hookedConn{Conn: c, hook: h}, nil
	}
	return o
}

// hookedConn runs the hook's function between a write of the armed command and the next read. It
// remembers the read deadline go-redis set (from the command's context) so it can move it.
type hookedConn struct {
	net.Conn
	hook    *ReplyHook
	pending HeldFunc

	mu       sync.Mutex
	deadline time.Time
}

func (c *hookedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *hookedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *hookedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		if fn := c.hook.wrote(p); fn != nil {
			c.pending = fn
		}
	}
	return n, err
}

func (c *hookedConn) Read(p []byte) (int, error) {
	if fn := c.pending; fn != nil {
		c.pending = nil
		held := fn()
		c.mu.Lock()
		if !c.deadline.IsZero() && held > 0 {
			c.deadline = c.deadline.Add(held)
			_ = c.Conn.SetReadDeadline(c.deadline)
		}
		overdue := !c.deadline.IsZero() && time.Now().After(c.deadline)
		c.mu.Unlock()
		// A read whose deadline passed while the client was stopped here times out, as Go's own
		// does when the deadline's timer runs before the read on waking. Left to the runtime, the
		// read returned the waiting reply in some runs and timed out in others.
		if overdue {
			return 0, os.ErrDeadlineExceeded
		}
	}
	return c.Conn.Read(p)
}

// NetConn exposes the TCP connection, so go-redis's pool can still peek at it for health checks.
func (c *hookedConn) NetConn() net.Conn { return c.Conn }
