//go:build !quickstart

package locks

// zkconn.go: what the ZooKeeper designs (zk, zk-session-aware, zk-rw) share: one go-zookeeper
// connection per client, opened lazily, and a record of its session as the library reports it.
//
// go-zookeeper v1.0.4 needs care, and every ZooKeeper client here is built the same way:
//   - its requests take no context and some never return while the client is cut off, so every
//     call is bounded by zkCall (Env.Timeout and the caller's ctx); an abandoned call keeps running
//     and a "late" handler undoes what it did if it succeeds after all;
//   - it reports the session through an event callback (WithEventCallback; its event channel drops
//     events when full, so it is not read), and after an expiry it silently opens a new session:
//     the callback notes each session that ended, so a holder can learn it lost its node;
//   - it logs with the std logger unless given one: our logger is quiet, and reads the session
//     timeout the server negotiated from the one line that carries it ("authenticated: ...");
//   - it exposes neither that timeout nor when it last heard from the server: a dialer wrapper
//     stamps every read from a server with Env.Now().

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkRoot is the persistent parent of every lock path.
const zkRoot = "/lockcheck"

// zkProtectedPrefix starts a "protected" node name: _c_<guid>-<name>, as Curator and go-zookeeper
// name them, so a client can find its node after losing the reply to its create.
const zkProtectedPrefix = "_c_"

// zkDefaultSession is the session timeout requested when the scenario gives no TTL.
const zkDefaultSession = 10 * time.Second

var zkACL = zk.WorldACL(zk.PermAll)

// zkLockPath is the lock's znode: /lockcheck/<key>, the key reduced to characters every znode name
// accepts.
func zkLockPath(key string) string {
	var b strings.Builder
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == ':', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" || name == "." || name == ".." {
		name = "_" + name
	}
	return zkRoot + "/" + name
}

// zkSession is one client's connection to ZooKeeper and what it knows of its sessions.
type zkSession struct {
	env Env

	mu      sync.Mutex
	conn    *zk.Conn
	closed  bool
	state   zk.State
	wake    chan struct{} // closed (and replaced) on every state change
	session int64         // id of the session we last had (0 before the first)
	ended   map[int64]time.Time
	// heard is when bytes last arrived from a server; heardAtLoss is heard when the connection
	// of the current session was last lost.
	heard, heardAtLoss time.Time
	negotiated         time.Duration // session timeout the server granted (0 until known)
	parents            map[string]bool
}

func newZKSession(env Env) *zkSession {
	return &zkSession{env: env, wake: make(chan struct{}), ended: map[int64]time.Time{}, parents: map[string]bool{}}
}

// connect opens the connection on first use and waits (bounded by ctx) until it has a session.
func (s *zkSession) connect(ctx context.Context) (*zk.Conn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("zookeeper: lock closed")
	}
	if s.conn == nil {
		if len(s.env.Nodes) == 0 {
			s.mu.Unlock()
			return nil, errors.New("zookeeper: no server addresses")
		}
		timeout := s.env.TTL
		if timeout <= 0 {
			timeout = zkDefaultSession
		}
		// The library's goroutine may call onEvent before Connect returns; onEvent waits for mu,
		// so it sees s.conn set.
		conn, _, err := zk.Connect(s.env.Nodes, timeout,
			zk.WithLogger(zkLogger{s}), zk.WithLogInfo(true),
			zk.WithEventCallback(s.onEvent), zk.WithDialer(s.dial))
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("zookeeper: connect %v: %w", s.env.Nodes, err)
		}
		s.conn = conn
	}
	for s.state != zk.StateHasSession {
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, fmt.Errorf("zookeeper: no session with %v: %w", s.env.Nodes, ctx.Err())
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("zookeeper: lock closed")
		}
	}
	conn := s.conn
	s.mu.Unlock()
	return conn, nil
}

// onEvent follows the session. It runs on the library's goroutine and must not block for long.
func (s *zkSession) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.env.Now()
	if s.state == zk.StateHasSession && ev.State != zk.StateHasSession {
		s.heardAtLoss = s.heard
	}
	switch ev.State {
	case zk.StateHasSession:
		id := s.conn.SessionID() // stored by the library before it reports the state
		if s.session != 0 && id != s.session {
			s.endSession(s.session, now) // a new session means the old one is gone
		}
		s.session = id
	case zk.StateExpired:
		s.endSession(s.session, now)
	}
	s.state = ev.State
	close(s.wake)
	s.wake = make(chan struct{})
}

// endSession records that session id is over, known at now. s.mu is held.
func (s *zkSession) endSession(id int64, now time.Time) {
	if id == 0 {
		return
	}
	if _, ok := s.ended[id]; ok {
		return
	}
	// It ended at the latest when we learned it, and at the latest one timeout after we last
	// heard from a server while we had it.
	at := now
	if !s.heardAtLoss.IsZero() {
		if t := s.lossDeadlineLocked(); t.Before(at) {
			at = t
		}
	}
	s.ended[id] = at
}

// timeoutLocked is the session timeout: the negotiated one once known, else the requested one.
func (s *zkSession) timeoutLocked() time.Duration {
	if s.negotiated > 0 {
		return s.negotiated
	}
	if s.env.TTL > 0 {
		return s.env.TTL
	}
	return zkDefaultSession
}

// sessionTimeout reports the session timeout in use (see timeoutLocked).
func (s *zkSession) sessionTimeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timeoutLocked()
}

// validUntil says until when session id (the owner of a held node) may still be alive: the zero
// time while we are connected with it; about one session timeout after we last heard from a
// server while the connection is lost (lossDeadlineLocked: the server may expire it from then on);
// a past time once it certainly ended (the server said so, or the library opened another session).
func (s *zkSession) validUntil(id int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.ended[id]; ok {
		return at
	}
	if s.session != id { // cannot happen without endSession; be safe
		return s.heardAtLoss
	}
	if s.state == zk.StateHasSession {
		return time.Time{}
	}
	return s.lossDeadlineLocked()
}

// lossDeadlineLocked is the earliest time the server may expire the session after we lost the
// connection: one session timeout after we last heard from it, less a drift allowance (1% + 2ms,
// as Redlock's clients allow) for the client's clock rate and the reply's trip from the server.
func (s *zkSession) lossDeadlineLocked() time.Time {
	timeout := s.timeoutLocked()
	return s.heardAtLoss.Add(timeout - timeout/100 - 2*time.Millisecond)
}

// sessionEnded reports whether session id certainly ended.
func (s *zkSession) sessionEnded(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ended[id]
	return ok
}

// dial connects to a server and stamps every read from it.
func (s *zkSession) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return zkHeardConn{Conn: newZKRenewalConn(c, s.env.reportRenewal), s: s}, nil
}

// zkSessionName names a session as promises record it (renewals_zk.go): "session 1000a2b3c4d0001";
// "" for none.
func zkSessionName(id int64) string {
	if id == 0 {
		return ""
	}
	return fmt.Sprintf("session %x", uint64(id))
}

type zkHeardConn struct {
	net.Conn
	s *zkSession
}

func (c zkHeardConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		now := c.s.env.Now()
		c.s.mu.Lock()
		c.s.heard = now
		c.s.mu.Unlock()
	}
	return n, err
}

// zkLogger drops the library's log lines, keeping the negotiated session timeout.
type zkLogger struct{ s *zkSession }

func (l zkLogger) Printf(format string, args ...any) {
	if format != "authenticated: id=%d, timeout=%d" || len(args) != 2 {
		return
	}
	if ms, ok := args[1].(int32); ok && ms > 0 {
		l.s.mu.Lock()
		l.s.negotiated = time.Duration(ms) * time.Millisecond
		l.s.mu.Unlock()
	}
}

// close closes the connection (the server deletes the session's ephemeral nodes).
func (s *zkSession) close() {
	s.mu.Lock()
	conn := s.conn
	s.closed = true
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
	if conn != nil {
		conn.Close() // not under mu: it waits for the library's goroutine, which calls onEvent
	}
}

// ensurePath creates path and its parents as persistent nodes (once per session object).
func (s *zkSession) ensurePath(ctx context.Context, conn *zk.Conn, path string) error {
	s.mu.Lock()
	done := s.parents[path]
	s.mu.Unlock()
	if done {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	p := ""
	for _, part := range parts {
		p += "/" + part
		_, err := zkCall(ctx, s.env.Timeout, func() (string, error) { return conn.Create(p, nil, 0, zkACL) }, nil)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zookeeper: create %s: %w", p, err)
		}
	}
	s.mu.Lock()
	s.parents[path] = true
	s.mu.Unlock()
	return nil
}

// zkCall runs one go-zookeeper call, bounded by ctx and timeout (when > 0). If the bound ends
// first it returns an error wrapping ctx's, and the call goes on in the background: late, if not
// nil, gets its result when it finally returns.
func zkCall[T any](ctx context.Context, timeout time.Duration, f func() (T, error), late func(T, error)) (T, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if late != nil {
			go func() {
				r := <-ch
				late(r.v, r.err)
			}()
		}
		var zero T
		return zero, fmt.Errorf("zookeeper: no answer: %w", ctx.Err())
	}
}

// zkCleanupContext bounds clean-up after ctx ended: Env.Timeout, whatever ctx says.
func zkCleanupContext(ctx context.Context, env Env) (context.Context, context.CancelFunc) {
	d := env.Timeout
	if d <= 0 {
		d = time.Second
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// zkGUID is the random part of a protected node name.
func zkGUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// zkSeq is the sequence number ZooKeeper appended to a sequential node's name (its last 10
// digits), or -1.
func zkSeq(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// zkSortBySeq returns the sequential children in sequence order (others are left out).
func zkSortBySeq(children []string) []string {
	out := make([]string, 0, len(children))
	for _, c := range children {
		if zkSeq(c) >= 0 {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return zkSeq(out[i]) < zkSeq(out[j]) })
	return out
}

// zkIsGone reports errors that mean the node or its session is gone for certain.
func zkIsGone(err error) bool {
	return errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired)
}

// ZKLockPath is the znode a ZooKeeper design keeps the lock under for key: what a run removes
// from a cluster it did not start.
func ZKLockPath(key string) string { return zkLockPath(key) }
