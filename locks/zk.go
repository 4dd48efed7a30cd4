//go:build !quickstart

package locks

// zk: github.com/go-zookeeper/zk v1.0.4's own lock, zk.NewLock(conn, path, acl) with
// LockWithData/Unlock, used as it is: what most Go users of ZooKeeper run (the lock recipe the
// ZooKeeper documentation gives, as the Chinese survey of lock families and the Chinese notes on
// ZooKeeper and Redis locks retell it). LockWithData creates a protected EPHEMERAL_SEQUENTIAL node
// <path>/_c_<guid>-lock-NNNNNNNNNN, the lowest sequence holds, a waiter watches its predecessor
// (GetW) with no timeout; Unlock deletes the node. The connection is built by zkconn.go (quiet
// logger, session events by callback, every call of ours bounded by Env.Timeout).
//
// What we add around it, and why:
//   - Lock takes no context and can wait forever: Acquire runs it in a goroutine. If ctx ends
//     first, the attempt is abandoned (whatever Lock returns later is undone: Unlock, or the node
//     deleted) and our node is deleted at once. Lock hides its node's path, so each attempt writes
//     a random id as the node's data (LockWithData) and finds its node by Children + Get: data =
//     the id and Stat.EphemeralOwner = conn.SessionID(). ErrBusy only when that node is certainly
//     gone and other clients' nodes are in the queue; anything else is an unknown outcome.
//   - Lock leaves its node in the queue when it fails (e.g. the connection drops while it waits);
//     a caller retrying on the same connection then waits behind its own orphan until the session
//     ends. We delete such nodes (now, or before the next attempt).
//   - The token is the czxid of the held node, read the same way.
//
// How it fails: the holder is never told that its session expired. After a partition or pause
// longer than the session timeout the server deletes the node and the next client takes the lock,
// while go-zookeeper silently opens a new session and Lock still believes it holds (K2, A1); its
// Unlock then deletes nothing (ErrNoNode). It does not implement Expiring, on purpose: no check
// could help. czxid fencing rescues the resource.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

func init() {
	Register(Design{
		Promise: zkPromise,
		Name:    "zk",
		Renews:  true,
		Queued:  true,
		Fair:    true, // the lowest sequential node holds, each waiter watches the one just before it
		Summary: "go-zookeeper/zk v1.0.4 zk.NewLock as it is: protected EPHEMERAL_SEQUENTIAL node, lowest holds, watch the predecessor; " +
			"holder never told of session expiry",
		Source:   "github.com/go-zookeeper/zk v1.0.4 lock.go; ZooKeeper's lock recipe, as two of the source articles retell it",
		Token:    "czxid of the holder's lock node",
		Nodes:    1,
		Expires:  true,
		Service:  ZooKeeper,
		Points:   nil,
		Blocking: "go-zookeeper's Lock watches its predecessor's node (GetW), in the queue of sequential nodes",
		Protects: "crashed holders (the ephemeral node goes with the session), herd effects (only the predecessor is watched), a leader crash " +
			"(sessions move to another server)",
		FailureModes: []string{
			"the holder is never told its session expired: go-zookeeper silently opens a new session and Lock keeps believing it holds " +
				"while another " +
				"client holds (a partition or pause longer than the session timeout, K2, A1); Unlock then deletes nothing; czxid fencing rescues",
			"no Expiring: the worker cannot even check (a holder that knew would still fail to a pause between check and write, K3)",
			"Lock takes no context: a waiter blocks until its predecessor goes or its session ends (run in a goroutine here and abandoned)",
			"on an error Lock leaves its node in the queue: a caller retrying on the same connection waits behind its own orphan until the session " +
				"ends (deleted here for it)",
		},
		Scenarios: []string{
			"no-faults-zk",
			"fairness-zk",
			"debate/k2-zk",
			"debate/k3-zk",
			"partition-zk",
			"leader-crash-zk",
			"debate/k11-quorum-split-zk",
		},
		New: func(env Env) (Lock, error) {
			return &zkLib{env: env, s: newZKSession(env), path: zkLockPath(env.Key)}, nil
		},
	})
}

type zkLib struct {
	env  Env
	s    *zkSession
	path string

	mu          sync.Mutex
	held        *zk.Lock
	heldID      string   // data of the held node
	heldSession int64    // the session that owns it
	pending     []string // ids of attempts whose nodes may still be in the queue
}

// Promised names the session the held node lives on.
func (l *zkLib) Promised() (int64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, zkSessionName(l.heldSession)
}

func (l *zkLib) addPending(id string) {
	l.mu.Lock()
	l.pending = append(l.pending, id)
	l.mu.Unlock()
}

// ours lists our session's nodes carrying data id, and how many other nodes the lock has.
func (l *zkLib) ours(ctx context.Context, conn *zk.Conn, id string) (mine []zkOwnNode, others int, err error) {
	children, err := zkCall(ctx, l.env.Timeout, func() ([]string, error) {
		ch, _, err := conn.Children(l.path)
		return ch, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	session := conn.SessionID()
	for _, c := range children {
		path := l.path + "/" + c
		type got struct {
			data []byte
			stat *zk.Stat
		}
		g, err := zkCall(ctx, l.env.Timeout, func() (got, error) {
			data, stat, err := conn.Get(path)
			return got{data, stat}, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone meanwhile
		}
		if err != nil {
			return nil, 0, err
		}
		if string(g.data) == id && g.stat.EphemeralOwner == session {
			mine = append(mine, zkOwnNode{path: path, czxid: g.stat.Czxid})
		} else {
			others++
		}
	}
	return mine, others, nil
}

type zkOwnNode struct {
	path  string
	czxid int64
}

// removeAttempt deletes every node of attempt id; it reports how many other nodes there were.
func (l *zkLib) removeAttempt(ctx context.Context, conn *zk.Conn, id string) (others int, err error) {
	mine, others, err := l.ours(ctx, conn, id)
	if err != nil {
		return 0, err
	}
	for _, n := range mine {
		_, err := zkCall(ctx, l.env.Timeout, func() (struct{}, error) { return struct{}{}, conn.Delete(n.path, -1) }, nil)
		if err != nil && !zkIsGone(err) {
			return 0, err
		}
	}
	return others, nil
}

func (l *zkLib) Acquire(ctx context.Context) (*int64, error) {
	l.mu.Lock()
	held := l.held != nil
	pending := l.pending
	l.pending = nil
	l.mu.Unlock()
	if held {
		return nil, errors.New("zk: this client already holds the lock")
	}
	conn, err := l.s.connect(ctx)
	if err != nil {
		l.mu.Lock()
		l.pending = append(pending, l.pending...)
		l.mu.Unlock()
		return nil, err
	}
	for i, id := range pending {
		if _, err := l.removeAttempt(ctx, conn, id); err != nil {
			l.mu.Lock()
			l.pending = append(pending[i:], l.pending...)
			l.mu.Unlock()
			return nil, fmt.Errorf("zk: could not delete a node left by an earlier attempt: %w", err)
		}
	}

	id := randomValue()
	lk := zk.NewLock(conn, l.path, zkACL)
	done := make(chan error, 1)
	go func() { done <- lk.LockWithData([]byte(id)) }()
	select {
	case err := <-done:
		if err != nil {
			cctx, cancel := zkCleanupContext(ctx, l.env)
			defer cancel()
			if _, cerr := l.removeAttempt(cctx, conn, id); cerr != nil {
				l.addPending(id)
			}
			return nil, fmt.Errorf("zk: Lock: %w", err)
		}
		return l.took(ctx, conn, lk, id)
	case <-ctx.Done():
	}

	// Abandon the attempt: undo whatever Lock still does, and delete our node now.
	go func() {
		err := <-done
		if err == nil {
			err = lk.Unlock()
		}
		if err != nil && !zkIsGone(err) {
			cctx, cancel := zkCleanupContext(context.Background(), l.env)
			defer cancel()
			if _, cerr := l.removeAttempt(cctx, conn, id); cerr != nil {
				l.addPending(id)
			}
		}
	}()
	cctx, cancel := zkCleanupContext(ctx, l.env)
	defer cancel()
	others, err := l.removeAttempt(cctx, conn, id)
	switch {
	case err != nil:
		l.addPending(id)
		return nil, fmt.Errorf("zk: gave up waiting (%v) and could not delete our node: %w", ctx.Err(), err)
	case others == 0:
		// Nobody else in the queue: our create (or Lock itself) was held up, not another client.
		return nil, fmt.Errorf("zk: Lock did not return before %v and no other client holds the lock", ctx.Err())
	}
	return nil, fmt.Errorf("%w (gave up waiting: %v)", ErrBusy, ctx.Err())
}

// took finds the node Lock now holds for its czxid. If it cannot, it gives the lock back: better
// no lock than one without its token.
func (l *zkLib) took(ctx context.Context, conn *zk.Conn, lk *zk.Lock, id string) (*int64, error) {
	cctx, cancel := zkCleanupContext(ctx, l.env)
	defer cancel()
	mine, _, err := l.ours(cctx, conn, id)
	if err == nil && len(mine) != 1 {
		err = fmt.Errorf("found %d nodes of ours, want 1 (session %#x)", len(mine), conn.SessionID())
	}
	if err != nil {
		if _, uerr := zkCall(cctx, l.env.Timeout, func() (struct{}, error) { return struct{}{}, lk.Unlock() }, nil); uerr != nil && !zkIsGone(uerr) {
			l.addPending(id)
		}
		return nil, fmt.Errorf("zk: took the lock but could not read its node for a token: %w", err)
	}
	l.mu.Lock()
	l.held, l.heldID, l.heldSession = lk, id, conn.SessionID()
	l.mu.Unlock()
	token := mine[0].czxid
	return &token, nil
}

func (l *zkLib) Release(ctx context.Context) error {
	l.mu.Lock()
	lk, id := l.held, l.heldID
	l.held, l.heldID = nil, ""
	l.mu.Unlock()
	if lk == nil {
		return ErrNotHeld
	}
	_, err := zkCall(ctx, l.env.Timeout, func() (struct{}, error) { return struct{}{}, lk.Unlock() }, nil)
	switch {
	case err == nil:
		return nil
	case zkIsGone(err), errors.Is(err, zk.ErrNotLocked):
		return fmt.Errorf("%w (%w)", ErrNotHeld, err)
	default:
		l.addPending(id) // deleted before the next attempt if still there
		return err
	}
}

func (l *zkLib) Close() error {
	l.s.close()
	return nil
}
