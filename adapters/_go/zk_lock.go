package main

// zk_lock.go: github.com/go-zookeeper/zk's own lock, zk.NewLock(conn, path, acl) with Lock and
// Unlock, at the version lockcheck was asked for (v1.0.1 and later): the same user code as
// lockcheck's built-in zk design, which runs v1.0.4 compiled in.
//
// Lock creates a protected ephemeral sequential node <path>/_c_<guid>-lock-NNNNNNNNNN; the lowest
// holds; a waiter watches its predecessor. It parses the sequence number of every child of the
// lock path: up to v1.0.1 it split the name at "-" only, so a kazoo client's node
// (<uuid>__lock__NNNNNNNNNN) made Lock fail with a parse error whenever one was in the queue;
// v1.0.2 also splits at "__" (go-zookeeper commit d69fe43, "make python and go clients be able to
// work together").
//
// What the adapter adds around the library, as the built-in design does:
//   - Lock takes no context and may wait for ever: it runs in a goroutine; if it has not
//     returned in time the attempt is abandoned (whatever it returns later is undone) and the
//     next attempt waits for it to finish. Answer busy only when other clients' nodes are queued.
//   - Lock leaves its node behind when it fails, and its API hides the node's path: the node is
//     found by its owner (our session), which holds no other node of this lock between holds,
//     and deleted, so that a retrying client does not queue behind its own orphan.
//   - The fencing token is the czxid of the held node, found the same way. When Lock says it holds
//     but our session has no node, the client holds as Lock told it, without a token (see took).
//   - No valid: the library never tells a holder that its session expired.

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

func main() { serve(newZKLock) }

var zkACL = zk.WorldACL(zk.PermAll)

type zkLock struct {
	init initRequest
	path string

	mu      sync.Mutex
	conn    *zk.Conn
	session chan struct{} // closed (and replaced) when the connection reports a new state
	state   zk.State
	held    *zk.Lock
	attempt chan struct{} // closed when the last attempt has finished, clean-up included
}

func newZKLock(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("zookeeper: no server addresses")
	}
	return &zkLock{init: init, path: zkLockPath(init.Lock), session: make(chan struct{})}, nil
}

// zkLockPath is /lockcheck/<key>, the key reduced to characters every znode name accepts (as the
// built-in ZooKeeper designs name it, so that clients of every design meet on one path).
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
	return "/lockcheck/" + name
}

// connect opens the connection on first use and waits, until deadline, for a session.
func (l *zkLock) connect(deadline time.Time) (*zk.Conn, error) {
	l.mu.Lock()
	if l.conn == nil {
		ttl := l.init.ttl()
		if ttl <= 0 {
			ttl = 10 * time.Second
		}
		conn, _, err := zk.Connect(l.init.Nodes, ttl, zk.WithLogger(quietLogger{}), zk.WithEventCallback(l.onEvent),
			zk.WithDialer(renewalDialer))
		if err != nil {
			l.mu.Unlock()
			return nil, fmt.Errorf("zookeeper: connect %v: %w", l.init.Nodes, err)
		}
		l.conn = conn
	}
	for l.state != zk.StateHasSession {
		wake := l.session
		l.mu.Unlock()
		select {
		case <-wake:
		case <-time.After(time.Until(deadline)):
			return nil, fmt.Errorf("zookeeper: no session with %v in time", l.init.Nodes)
		}
		l.mu.Lock()
	}
	conn := l.conn
	l.mu.Unlock()
	return conn, nil
}

func (l *zkLock) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state = ev.State
	close(l.session)
	l.session = make(chan struct{})
}

// renewalDialer connects to a server and reports every request of the session the server answers
// as a renewal (renewals_zk.go).
func renewalDialer(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return newZKRenewalConn(c, reportRenewal), nil
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...interface{}) {}

// bounded runs f, giving up at deadline (f goes on in the background).
func bounded[T any](deadline time.Time, f func() (T, error)) (T, error) {
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
	case <-time.After(time.Until(deadline)):
		var zero T
		return zero, errors.New("zookeeper: no answer in time")
	}
}

// ownNodes lists the lock's children our session owns (with their czxid) and counts the others.
func (l *zkLock) ownNodes(conn *zk.Conn, deadline time.Time) (mine map[string]int64, others int, err error) {
	children, err := bounded(deadline, func() ([]string, error) {
		ch, _, err := conn.Children(l.path)
		return ch, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	mine = map[string]int64{}
	session := conn.SessionID()
	for _, c := range children {
		p := l.path + "/" + c
		st, err := bounded(deadline, func() (*zk.Stat, error) {
			_, st, err := conn.Exists(p)
			return st, err
		})
		switch {
		case err != nil:
			return nil, 0, err
		case st == nil: // gone meanwhile
		case st.EphemeralOwner == session:
			mine[p] = st.Czxid
		default:
			others++
		}
	}
	return mine, others, nil
}

// deleteOwn deletes every node of ours (between holds, all of them are orphans of failed or
// abandoned attempts) and counts the other clients' nodes.
func (l *zkLock) deleteOwn(conn *zk.Conn, deadline time.Time) (others int, err error) {
	mine, others, err := l.ownNodes(conn, deadline)
	if err != nil {
		return 0, err
	}
	for p := range mine {
		p := p
		_, err := bounded(deadline, func() (struct{}, error) { return struct{}{}, conn.Delete(p, -1) })
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return 0, err
		}
	}
	return others, nil
}

func (l *zkLock) acquire(within time.Duration) answer {
	deadline := time.Now().Add(within)
	l.mu.Lock()
	held, prev := l.held != nil, l.attempt
	l.mu.Unlock()
	if held {
		return unknownf("zk: this client already holds the lock")
	}
	if prev != nil {
		select {
		case <-prev:
		case <-time.After(time.Until(deadline)):
			return unknownf("zk: an earlier attempt is still finishing")
		}
	}
	conn, err := l.connect(deadline)
	if err != nil {
		return unknown(err)
	}
	if _, err := l.deleteOwn(conn, deadline); err != nil {
		return unknownf("zk: could not delete a node left by an earlier attempt: %v", err)
	}

	lk := zk.NewLock(conn, l.path, zkACL)
	result := make(chan error, 1)
	finished := make(chan struct{})
	l.mu.Lock()
	l.attempt = finished
	l.mu.Unlock()
	go func() { result <- lk.Lock() }()

	// Leave a little time to clean up and answer before the deadline.
	slack := min(l.init.timeout(), within/4)
	select {
	case err := <-result:
		defer close(finished)
		if err != nil {
			cleanup := time.Now().Add(l.init.timeout())
			if _, cerr := l.deleteOwn(conn, cleanup); cerr != nil {
				return unknownf("zk: Lock: %v (and our node could not be deleted: %v)", err, cerr)
			}
			return unknownf("zk: Lock: %v (our node was deleted)", err)
		}
		return l.took(conn, lk, deadline)
	case <-time.After(time.Until(deadline.Add(-slack))):
	}

	// Abandon the attempt: whatever Lock returns later is undone; our node goes now.
	go func() {
		defer close(finished)
		if err := <-result; err == nil {
			_ = lk.Unlock()
		}
		_, _ = l.deleteOwn(conn, time.Now().Add(l.init.timeout()))
	}()
	others, err := l.deleteOwn(conn, time.Now().Add(slack))
	switch {
	case err != nil:
		return unknownf("zk: gave up waiting and could not delete our node: %v", err)
	case others == 0:
		return unknownf("zk: Lock did not return in time and no other client holds the lock")
	}
	return fail("another client holds the lock (gave up waiting)")
}

// took finds the node Lock now holds, for its czxid.
//
// Lock can return success when our session has no node at all. It never checks that its own node
// is still among the children: a waiter whose session expired while it was frozen reads its
// predecessor's deletion, still buffered from the old connection, and lists the children again; the
// library keeps that request queued across the reconnection, so the new session answers it, and
// with its node gone Lock finds no lower sequence than its own. Its user goes on: so does this
// client, holding without a token (there is no node to read one from). Giving the lock back here,
// as the built-in zk design does when it cannot read its token, would hide what the library did.
func (l *zkLock) took(conn *zk.Conn, lk *zk.Lock, deadline time.Time) answer {
	mine, _, err := l.ownNodes(conn, deadline.Add(l.init.timeout()))
	if err == nil && len(mine) > 1 {
		err = fmt.Errorf("found %d nodes of ours, want 1", len(mine))
	}
	if err != nil {
		_ = lk.Unlock()
		return unknownf("zk: took the lock but could not read its node for a token: %v", err)
	}
	l.mu.Lock()
	l.held = lk
	l.mu.Unlock()
	a := ok() // no node of ours: held as Lock said, without a token
	for _, czxid := range mine {
		a = okToken(czxid) // the only one
	}
	a.Session = fmt.Sprintf("session %x", uint64(conn.SessionID())) // as renewals_zk.go names it
	return a
}

func (l *zkLock) release(within time.Duration) answer {
	l.mu.Lock()
	lk := l.held
	l.held = nil
	l.mu.Unlock()
	if lk == nil {
		return fail("this client does not hold the lock")
	}
	_, err := bounded(time.Now().Add(within), func() (struct{}, error) { return struct{}{}, lk.Unlock() })
	switch {
	case err == nil:
		return ok()
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
		return fail("Unlock: " + err.Error())
	}
	return unknown(err) // the node is deleted before the next attempt if it is still there
}

func (l *zkLock) close() {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}
