//go:build !quickstart

package locks

// zk-session-aware: the ZooKeeper lock recipe as Apache Curator's InterProcessMutex writes it (the
// recipe the Chinese survey of lock families and the Chinese notes on ZooKeeper and Redis locks
// describe), written here on go-zookeeper v1.0.4 (zkconn.go). Each attempt creates an
// EPHEMERAL_SEQUENTIAL child _c_<guid>-lock-NNNNNNNNNN under /lockcheck/<key>; the lowest sequence
// holds; a waiter watches only its predecessor (GetW) and looks again when it goes. The "protected"
// name lets a client whose create lost its reply find its node by the GUID before creating another.
// Giving up (ctx ends) deletes the node, so no orphan waits in the queue; a delete that cannot be
// done is retried before the next attempt. The fencing token is the czxid of the holder's node:
// global and increasing in acquisition order.
//
// Unlike go-zookeeper's zk.Lock, the holder follows its session (locks.Expiring), as Curator's
// connection states do (SUSPENDED: you may have lost it; LOST: you have): ValidUntil is the zero
// time while connected; once the connection is lost, the last time a server was heard from plus
// the negotiated session timeout (the server cannot expire the session before that, up to one
// round trip); a past time once the session certainly ended (the library saw it expire, or opened a
// new one). Curator counts from the disconnect; counting from the last read is earlier, so safer.
//
// How it fails: a pause of the whole client (GC, SIGSTOP) is invisible while it lasts: the
// connection still looks up when the process resumes, until the library's loop notices, so a check
// made at once can pass (K2); a pause between the check and the write is not caught at all (K3).
// Fencing by czxid rescues both.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

func init() {
	Register(Design{
		Promise:  zkPromise,
		Name:     "zk-session-aware",
		Renews:   true,
		Queued:   true,
		Fair:     true, // the lowest sequential node holds, each waiter watches the one just before it
		Summary:  "ZooKeeper EPHEMERAL_SEQUENTIAL protected node, lowest holds, watch the predecessor; the holder follows its session (Curator-style)",
		Source:   "Apache Curator InterProcessMutex; ZooKeeper's lock recipe, as two of the source articles retell it",
		Token:    "czxid of the holder's lock node",
		Nodes:    1,
		Expires:  true,
		Service:  ZooKeeper,
		Points:   nil,
		Blocking: "a watch on its predecessor's node (GetW), in the queue of sequential nodes",
		Protects: "crashed or cut-off holders (the ephemeral node goes with the session), herd effects (only the predecessor is watched), lost " +
			"create replies (protected names), a holder cut off from ZooKeeper (it stops believing one session timeout after it last heard from a server)",
		FailureModes: []string{
			"a pause of the whole client longer than the session timeout: another client holds meanwhile; on resume the connection still looks up " +
				"until the library notices, so a check made at once passes (K2); czxid fencing rescues",
			"a pause between the validity check and the write (K3): nothing can catch it; czxid fencing rescues",
			"validity counts from the last read from a server: off by up to one round trip from when the server last heard from us (ZooKeeper rounds " +
				"expiry up to a tick, which covers it here)",
		},
		Scenarios: []string{"no-faults-zk-session-aware", "fairness-zk-session-aware", "debate/k2-zk-session-aware",
			"debate/k3-zk-session-aware", "partition-zk-session-aware"},
		New: func(env Env) (Lock, error) {
			return newZKRecipe(env, zkMutexKind), nil
		},
	})
}

// zkKind says what a recipe node is: its name and which node ahead of it blocks it.
type zkKind struct {
	name   string // after the protected prefix: "lock-", "__READ__", "__WRIT__"
	shared bool   // a reader: only writers ahead block it
}

var (
	zkMutexKind = zkKind{name: "lock-"}
	zkReadKind  = zkKind{name: "__READ__", shared: true}
	zkWriteKind = zkKind{name: "__WRIT__"}
)

// zkBlocker returns the node our node (at index i of children sorted by sequence) must wait for,
// or "" if it holds: its predecessor for an exclusive node, the last writer ahead for a reader.
func (k zkKind) zkBlocker(sorted []string, i int) string {
	if !k.shared {
		if i == 0 {
			return ""
		}
		return sorted[i-1]
	}
	for j := i - 1; j >= 0; j-- {
		if strings.Contains(sorted[j], zkWriteKind.name) {
			return sorted[j]
		}
	}
	return ""
}

// zkRecipe is one client's handle on a recipe lock (mutex, or one side of a read/write lock).
type zkRecipe struct {
	env  Env
	s    *zkSession
	path string
	kind zkKind

	mu      sync.Mutex
	node    string // full path of the node we hold, "" if none
	owner   int64  // its session
	pending []zkPending
}

// zkPending is a node we may have left in the queue: by path, or by the GUID of a create whose
// outcome we do not know.
type zkPending struct{ path, guid string }

// Promised names the session the held node lives on.
func (r *zkRecipe) Promised() (int64, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return 0, zkSessionName(r.owner)
}

func newZKRecipe(env Env, kind zkKind) *zkRecipe {
	return &zkRecipe{env: env, s: newZKSession(env), path: zkLockPath(env.Key), kind: kind}
}

func (r *zkRecipe) addPending(p zkPending) {
	r.mu.Lock()
	r.pending = append(r.pending, p)
	r.mu.Unlock()
}

// flushPending deletes the nodes earlier attempts may have left behind.
func (r *zkRecipe) flushPending(ctx context.Context, conn *zk.Conn) error {
	r.mu.Lock()
	todo := r.pending
	r.pending = nil
	r.mu.Unlock()
	var errs []error
	for i, p := range todo {
		err := r.deleteLeftover(ctx, conn, p)
		if err != nil {
			r.mu.Lock()
			r.pending = append(r.pending, todo[i:]...)
			r.mu.Unlock()
			errs = append(errs, err)
			break
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("zookeeper: could not delete a node left by an earlier attempt: %w", errors.Join(errs...))
	}
	return nil
}

func (r *zkRecipe) deleteLeftover(ctx context.Context, conn *zk.Conn, p zkPending) error {
	path := p.path
	if path == "" {
		found, err := r.findGUID(ctx, conn, p.guid)
		if err != nil || found == "" {
			return err
		}
		path = found
	}
	return r.deleteNode(ctx, conn, path)
}

// deleteNode deletes path; a node already gone is fine.
func (r *zkRecipe) deleteNode(ctx context.Context, conn *zk.Conn, path string) error {
	_, err := zkCall(ctx, r.env.Timeout, func() (struct{}, error) { return struct{}{}, conn.Delete(path, -1) }, nil)
	if err != nil && !zkIsGone(err) {
		return err
	}
	return nil
}

// findGUID returns the full path of our node carrying guid, or "".
func (r *zkRecipe) findGUID(ctx context.Context, conn *zk.Conn, guid string) (string, error) {
	children, err := zkCall(ctx, r.env.Timeout, func() ([]string, error) {
		ch, _, err := conn.Children(r.path)
		return ch, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, c := range children {
		if strings.HasPrefix(c, zkProtectedPrefix+guid) {
			return r.path + "/" + c, nil
		}
	}
	return "", nil
}

// create makes our protected node and returns its full path. After an error that may hide a
// created node it looks for the GUID before trying again (Curator's protection mode).
func (r *zkRecipe) create(ctx context.Context, conn *zk.Conn) (string, error) {
	guid := zkGUID()
	name := r.path + "/" + zkProtectedPrefix + guid + "-" + r.kind.name
	var err error
	for try := 0; try < 3; try++ {
		var node string
		node, err = zkCall(ctx, r.env.Timeout,
			func() (string, error) { return conn.Create(name, nil, zk.FlagEphemeral|zk.FlagSequence, zkACL) },
			func(node string, err error) { // it went through after we stopped waiting: undo it
				if err == nil {
					cctx, cancel := zkCleanupContext(context.Background(), r.env)
					defer cancel()
					if r.deleteNode(cctx, conn, node) != nil {
						r.addPending(zkPending{path: node})
					}
				}
			})
		switch {
		case err == nil:
			return node, nil
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			return "", err // the late handler deletes the node if the create goes through
		case errors.Is(err, zk.ErrNoNode):
			r.s.mu.Lock()
			delete(r.s.parents, r.path)
			r.s.mu.Unlock()
			if perr := r.s.ensurePath(ctx, conn, r.path); perr != nil {
				return "", perr
			}
		case errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrNoServer):
			// Never applied (or gone with its session): just try again.
		default:
			// The create may have been applied before its reply was lost.
			found, ferr := r.findGUID(ctx, conn, guid)
			if ferr != nil {
				r.addPending(zkPending{guid: guid})
				return "", errors.Join(err, ferr)
			}
			if found != "" {
				return found, nil
			}
		}
	}
	return "", err
}

func (r *zkRecipe) Acquire(ctx context.Context) (*int64, error) {
	r.mu.Lock()
	held := r.node != ""
	r.mu.Unlock()
	if held {
		return nil, errors.New("zookeeper: this client already holds the lock")
	}
	conn, err := r.s.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.flushPending(ctx, conn); err != nil {
		return nil, err
	}
	if err := r.s.ensurePath(ctx, conn, r.path); err != nil {
		return nil, err
	}
	node, err := r.create(ctx, conn)
	if err != nil {
		return nil, err
	}
	base := node[strings.LastIndexByte(node, '/')+1:]
	for {
		children, err := zkCall(ctx, r.env.Timeout, func() ([]string, error) {
			ch, _, err := conn.Children(r.path)
			return ch, err
		}, nil)
		if err != nil {
			return nil, r.giveUp(ctx, conn, node, err)
		}
		sorted := zkSortBySeq(children)
		i := indexOf(sorted, base)
		if i < 0 {
			return nil, fmt.Errorf("zookeeper: our lock node %s is gone (session expired?)", node)
		}
		blocker := r.kind.zkBlocker(sorted, i)
		if blocker == "" {
			return r.took(ctx, conn, node)
		}
		ch, err := zkCall(ctx, r.env.Timeout, func() (<-chan zk.Event, error) {
			_, _, ch, err := conn.GetW(r.path + "/" + blocker)
			return ch, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone already: look again
		}
		if err != nil {
			return nil, r.giveUp(ctx, conn, node, err)
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNotWatching {
				// The session expired (our node with it) or the connection is closing.
				return nil, r.giveUp(ctx, conn, node, fmt.Errorf("zookeeper: watch on %s ended: %v", blocker, ev.Err))
			}
		case <-ctx.Done():
			return nil, r.giveUp(ctx, conn, node, nil)
		}
	}
}

// took records node as held and returns its czxid.
func (r *zkRecipe) took(ctx context.Context, conn *zk.Conn, node string) (*int64, error) {
	stat, err := zkCall(ctx, r.env.Timeout, func() (*zk.Stat, error) {
		ok, st, err := conn.Exists(node)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	}, nil)
	if err != nil {
		return nil, r.giveUp(ctx, conn, node, fmt.Errorf("zookeeper: read our lock node: %w", err))
	}
	r.mu.Lock()
	r.node, r.owner = node, stat.EphemeralOwner
	r.mu.Unlock()
	token := stat.Czxid
	return &token, nil
}

// giveUp deletes our node after a failed or timed-out attempt. cause nil means ctx ended while
// another client was ahead of us: ErrBusy once our node is certainly gone. A node we cannot
// delete is remembered and deleted before the next attempt; the outcome is then unknown.
func (r *zkRecipe) giveUp(ctx context.Context, conn *zk.Conn, node string, cause error) error {
	cctx, cancel := zkCleanupContext(ctx, r.env)
	defer cancel()
	if err := r.deleteNode(cctx, conn, node); err != nil {
		r.addPending(zkPending{path: node})
		if cause == nil {
			cause = ctx.Err()
		}
		return fmt.Errorf("zookeeper: gave up waiting (%v) but could not delete our node %s: %w", cause, node, err)
	}
	if cause == nil {
		return fmt.Errorf("%w (gave up waiting: %v)", ErrBusy, ctx.Err())
	}
	return cause
}

func (r *zkRecipe) Release(ctx context.Context) error {
	r.mu.Lock()
	node, owner := r.node, r.owner
	r.node, r.owner = "", 0
	r.mu.Unlock()
	if node == "" {
		return ErrNotHeld
	}
	if r.s.sessionEnded(owner) {
		return fmt.Errorf("%w (session %#x expired)", ErrNotHeld, owner)
	}
	conn, err := r.s.connect(ctx)
	if err == nil {
		_, err = zkCall(ctx, r.env.Timeout, func() (struct{}, error) { return struct{}{}, conn.Delete(node, -1) }, nil)
	}
	switch {
	case err == nil:
		return nil
	case zkIsGone(err):
		return fmt.Errorf("%w (%w)", ErrNotHeld, err)
	default:
		r.addPending(zkPending{path: node}) // deleted before the next attempt
		return err
	}
}

// ValidUntil follows the holder's session (see the file comment): zero while connected.
func (r *zkRecipe) ValidUntil() time.Time {
	r.mu.Lock()
	node, owner := r.node, r.owner
	r.mu.Unlock()
	if node == "" {
		return time.Time{}
	}
	return r.s.validUntil(owner)
}

func (r *zkRecipe) Close() error {
	r.s.close()
	return nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
