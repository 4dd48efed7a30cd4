//go:build !quickstart

package locks

// etcd-lock-rpc: etcd's server-side lock, the v3lock service's Lock and Unlock RPCs (package
// v3lockpb of go.etcd.io/etcd/server/v3 v3.5.35, called over the connection of the client
// go.etcd.io/etcd/client/v3 v3.5.35), as a client in any language uses it through gRPC or the
// JSON gateway: grant a lease and keep it alive (here concurrency.Session, which does both), call
// Lock with the lock's name and the lease, work, call Unlock with the key Lock returned. Lock blocks
// in the server until the lock is ours; the server runs the same Mutex as the Go client's, on the
// keys <name>/<lease id>, so this design shares a lock with the etcd designs (same prefix).
//
// The Lock answer carries the key and a response header whose revision is when the wait ended,
// not when the key was made. The fencing token is the key's create revision, like the etcd
// design's: read with one Get of the key right after Lock answers. A key that is gone by then has
// no create revision, and the design hands out no token (a stale holder without a token reaches
// only the unfenced register).
//
// The server's Mutex decides the bug that etcd issues #9921 ("Lock response when lease has
// expired", 2018) and #11456 ("Locks return without checking whether the lease is still held",
// Jepsen, 2019) describe: a waiter whose lease expires while it waits loses its key, and when the
// holder ahead of it unlocks, every 3.4 server answers its Lock with success. Two clients hold.
// From 3.5.0 (etcd PR #11408) the server reads the waiter's key back and answers "mutex: session
// is expired". Which happens depends only on the server's version (services/etcd: server.version).
//
// As most code is written, the holder never looks at its lease after Lock: Lock, work, Unlock.
//
// Around the RPCs, as in the etcd design: Acquire runs the attempt in a goroutine and returns when
// its context ends; an attempt that gave up (its context ended, the server dropped the wait) or
// failed in an unknown way revokes its lease, so whatever key it may have left goes with it and
// the next attempt starts a session of its own.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func init() {
	Register(Design{
		Name: "etcd-lock-rpc",
		Summary: "etcd's server-side lock (v3lock Lock/Unlock RPCs) with a lease the client keeps alive, " +
			"as clients in any language use it: Lock, work, Unlock, never looking at the lease",
		Source: "etcd's v3lock service (go.etcd.io/etcd/server/v3 v3.5.35, package v3lockpb) over client v3.5.35; " +
			"etcd issues #9921 and #11456 (Jepsen's etcd 3.4.3 analysis, Kyle Kingsbury, 2020)",
		Token:    "create revision of the key Lock returns (read with a Get right after Lock answers)",
		Nodes:    3,
		Expires:  true,
		Renews:   true, // the client keeps the lease alive
		Queued:   true, // each waiter's key lives on its own lease
		Service:  Etcd,
		Promise:  Promise{Slack: SessionSlack, RenewalsOnly: true, Words: "the lease's TTL from each keep-alive of its lease"},
		Blocking: "the Lock RPC waits in the server until every older key under the lock's name is gone",
		Protects: "crashed or cut-off holders (the key goes with the lease), herd effects (the server watches only the key ahead), " +
			"and, from server 3.5.0, a waiter whose lease expired while it waited (the server reads its key back)",
		FailureModes: []string{
			"on every 3.4 server (Debian's 3.4.23, 3.4.3): a waiter whose lease expires while it waits is answered with success " +
				"once the holder ahead unlocks, although its key is gone: two holders (etcd #9921, #11456; track-record/lock-rpc-waiter-expires-*)",
			"a pause or partition longer than the TTL: the lease expires, another client holds, and the holder writes anyway (K2); " +
				"create-revision fencing rescues",
			"a holder granted a key that is already gone gets no token, so fencing cannot rescue its unfenced writes",
		},
		Scenarios: []string{"no-faults-etcd-lock-rpc", "track-record/lock-rpc-waiter-expires-3.4.3",
			"track-record/lock-rpc-waiter-expires-3.4.23", "track-record/lock-rpc-waiter-expires-3.5.21", "jepsen/server-pauses-etcd"},
		New: func(env Env) (Lock, error) { return newEtcdLockRPC(env) },
	})
}

// etcdLockRPC is one client's handle on the server-side lock.
type etcdLockRPC struct {
	env  Env
	ttl  int // seconds
	cli  *clientv3.Client
	rpc  v3lockpb.LockClient
	name string
	log  *zap.Logger // the client library's logger: warnings go to the client's log

	mu       sync.Mutex
	sess     *concurrency.Session // the current lease, nil until the first attempt
	held     []byte               // the key Lock returned, while we hold
	heldSess *concurrency.Session
	attempt  chan struct{} // closed when the last attempt has finished, clean-up included
}

// Promised names the lease the hold lives on.
func (l *etcdLockRPC) Promised() (int64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.heldSess == nil {
		return 0, ""
	}
	return 0, etcdLeaseName(int64(l.heldSess.Lease()))
}

func newEtcdLockRPC(env Env) (*etcdLockRPC, error) {
	if env.TTL < time.Second || env.TTL%time.Second != 0 {
		return nil, fmt.Errorf("etcd lock RPC: a lease lasts whole seconds; ttl %s is not", env.TTL)
	}
	if len(env.Nodes) == 0 {
		return nil, errors.New("etcd lock RPC: no endpoints")
	}
	log := etcdLogger()
	cli, err := clientv3.New(clientv3.Config{Endpoints: env.Nodes, Logger: log, DialOptions: etcdDialOptions(env)})
	if err != nil {
		return nil, fmt.Errorf("etcd lock RPC: client: %w", err)
	}
	return &etcdLockRPC{env: env, ttl: int(env.TTL / time.Second), cli: cli, rpc: v3lockpb.NewLockClient(cli.ActiveConnection()),
		name: etcdMutexPrefix(env.Key), log: log}, nil
}

// rpcAttempt is what one attempt came to.
type rpcAttempt struct {
	s     *concurrency.Session
	key   []byte
	token *int64
	err   error
}

func (l *etcdLockRPC) Acquire(ctx context.Context) (*int64, error) {
	l.mu.Lock()
	held, prev := l.held != nil, l.attempt
	l.mu.Unlock()
	if held {
		return nil, errors.New("etcd lock RPC: this client already holds the lock")
	}
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return nil, fmt.Errorf("etcd lock RPC: an earlier attempt is still finishing: %w", ctx.Err())
		}
	}
	done := make(chan struct{})
	l.mu.Lock()
	l.attempt = done
	l.mu.Unlock()
	r, ok := etcdAbandonable(ctx, l.env.Timeout, done, l.try, l.undo)
	if !ok {
		return nil, fmt.Errorf("etcd lock RPC: no answer before %w (the attempt is abandoned and undone when it ends)", ctx.Err())
	}
	if r.err != nil {
		return nil, r.err
	}
	l.mu.Lock()
	l.held, l.heldSess = r.key, r.s
	l.mu.Unlock()
	return r.token, nil
}

// try is one attempt: the current lease (a new one if it ended), Lock, and the key's create
// revision. On failure it gives up the lease where a key of ours may stand.
func (l *etcdLockRPC) try(ctx context.Context) rpcAttempt {
	s, err := l.session()
	if err != nil {
		return rpcAttempt{err: fmt.Errorf("etcd lock RPC: lease: %w", err)}
	}
	resp, err := l.rpc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte(l.name), Lease: int64(s.Lease())})
	if err != nil {
		return rpcAttempt{s: s, err: l.lockFailed(s, err)}
	}
	r := rpcAttempt{s: s, key: resp.Key}
	// The token: the key's create revision. A failed read leaves the hold without one rather
	// than undoing a lock the server granted; the client's log says which it was.
	gctx, gcancel := context.WithTimeout(context.Background(), 4*l.env.Timeout)
	defer gcancel()
	g, err := l.cli.Get(gctx, string(resp.Key))
	switch {
	case err != nil:
		l.log.Warn("lock granted; its key's create revision could not be read, so no token", zap.ByteString("key", resp.Key), zap.Error(err))
	case len(g.Kvs) == 0:
		l.log.Warn("lock granted on a key that no longer exists (its lease expired while Lock waited): no token", zap.ByteString("key", resp.Key))
	default:
		rev := g.Kvs[0].CreateRevision
		r.token = &rev
	}
	return r
}

// lockFailed says what a failed Lock came to. The server drops a wait whose context ended and
// deletes the waiter's key; whatever it did, the lease is revoked so that no key of ours stays.
func (l *etcdLockRPC) lockFailed(s *concurrency.Session, err error) error {
	if strings.Contains(status.Convert(err).Message(), concurrency.ErrSessionExpired.Error()) {
		// The server read our key back and found it gone with our lease (3.5 and later): its
		// error comes as gRPC's Unknown with the Mutex's message.
		l.dropSession(s)
		return fmt.Errorf("etcd lock RPC: Lock: %s (the key went with the lease)", concurrency.ErrSessionExpired)
	}
	revoked := l.revoke(s)
	if gaveUpWaiting(err) && revoked == nil {
		return fmt.Errorf("%w (gave up waiting: %v; the lease was revoked with any key of ours)", ErrBusy, err)
	}
	if revoked != nil {
		return fmt.Errorf("etcd lock RPC: Lock: %w (and revoking the lease failed: %v)", err, revoked)
	}
	return fmt.Errorf("etcd lock RPC: Lock: %w (the lease was revoked with any key of ours)", err)
}

// gaveUpWaiting reports whether a Lock error says our own deadline ended the wait. It does on both
// sides: the client's gRPC says DeadlineExceeded (or Canceled), or the server's answer, its wait
// ended by the deadline the request carried, comes first, as Unknown with the context's words
// (seen under load).
func gaveUpWaiting(err error) bool {
	st := status.Convert(err)
	switch st.Code() {
	case codes.DeadlineExceeded, codes.Canceled:
		return true
	case codes.Unknown:
		return st.Message() == context.DeadlineExceeded.Error() || st.Message() == context.Canceled.Error()
	}
	return false
}

// revoke revokes s's lease and forgets the session: whatever key it held is gone with it.
func (l *etcdLockRPC) revoke(s *concurrency.Session) error {
	l.dropSession(s)
	ctx, cancel := context.WithTimeout(context.Background(), 4*l.env.Timeout)
	defer cancel()
	_, err := l.cli.Revoke(ctx, s.Lease())
	return err
}

// dropSession stops renewing s's lease and makes the next attempt start a new one.
func (l *etcdLockRPC) dropSession(s *concurrency.Session) {
	s.Orphan()
	l.mu.Lock()
	if l.sess == s {
		l.sess = nil
	}
	l.mu.Unlock()
}

// session returns the current lease's session, or a new one if there is none or it ended.
func (l *etcdLockRPC) session() (*concurrency.Session, error) {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	if s != nil && !etcdSessionEnded(s) {
		return s, nil
	}
	if s != nil {
		go func() { _ = s.Close() }() // revoke what may be left of the lease; it is gone anyway
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithTTL(l.ttl))
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.sess = s
	l.mu.Unlock()
	return s, nil
}

// undo gives back what an abandoned attempt came to: a granted lock is unlocked (its lease
// revoked if that fails).
func (l *etcdLockRPC) undo(r rpcAttempt) {
	if r.err != nil || r.key == nil {
		return // lockFailed has revoked the lease already
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*l.env.Timeout)
	defer cancel()
	if _, err := l.rpc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: r.key}); err != nil {
		_ = l.revoke(r.s)
	}
}

func (l *etcdLockRPC) Release(ctx context.Context) error {
	l.mu.Lock()
	key, s := l.held, l.heldSess
	l.held, l.heldSess = nil, nil
	l.mu.Unlock()
	if key == nil {
		return ErrNotHeld
	}
	ended := etcdSessionEnded(s)
	if _, err := l.rpc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: key}); err != nil {
		_ = l.revoke(s) // the key goes with the lease
		return fmt.Errorf("etcd lock RPC: Unlock: %w", err)
	}
	if ended {
		return fmt.Errorf("%w: the lease had ended (expired or could not be renewed), so the key may have gone with it", ErrNotHeld)
	}
	return nil
}

func (l *etcdLockRPC) Close() error {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	return etcdClose(l.cli, s, 4*l.env.Timeout)
}
