package main

// etcd_mutex.go: etcd's client lock, package concurrency's Session and Mutex, at the client
// version lockcheck was asked for: the same user code as lockcheck's built-in etcd designs (which
// run client v3.5.35 compiled in). The package moved between releases; etcd_v34.go and
// etcd_v35.go each give this file the names of one layout.
//
// A Session is a lease of TTL seconds that the library keeps alive; Mutex.Lock puts the key
// <prefix>/<lease id> under it, the key with the lowest create revision holds, a waiter watches
// the key just ahead of its own until it is deleted. Up to 3.4, Lock then returned at once: a
// waiter whose lease had expired while it waited (its key deleted with it) was told it held the
// lock (etcd issues #9921 and #11456, found by Jepsen's etcd 3.4.3 analysis, Kyle Kingsbury,
// 2020). From 3.5.0 Lock reads its key back and fails with ErrSessionExpired (etcd PR #11408).
//
// The fencing token is the held key's create revision (what Mutex.IsOwner compares). With the
// argument "checked" (the etcd design) the holder looks at its session before each access:
// valid fails once Session.Done() has closed. Without it (etcd-unchecked) it never looks.
//
// Around the library, as the built-in designs: Lock runs in a goroutine with a context that
// ends a little before the answer is due, so that Lock can delete its key when it gives up; an
// attempt still running then is abandoned and undone when it ends, and the next attempt waits for
// it. A session whose Done closed is replaced at the next attempt.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
)

func main() {
	checked := len(os.Args) > 1 && os.Args[1] == "checked"
	serve(func(init initRequest) (lockClient, error) {
		l, err := newEtcdLock(init)
		if err != nil || !checked {
			return l, err
		}
		return etcdChecked{l}, nil
	})
}

type etcdLock struct {
	init   initRequest
	ttl    int // seconds
	cli    *etcdClient
	prefix string

	mu       sync.Mutex
	sess     *etcdSession
	held     *etcdMutex
	heldSess *etcdSession
	attempt  chan struct{} // closed when the last attempt has finished, clean-up included
	pending  []string      // keys of ours an attempt or a release may have left behind
}

func newEtcdLock(init initRequest) (*etcdLock, error) {
	ttl := init.ttl()
	if ttl < time.Second || ttl%time.Second != 0 {
		return nil, fmt.Errorf("etcd: a lease lasts whole seconds; ttl %s is not", ttl)
	}
	if len(init.Nodes) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	// Every keep-alive of the session's lease is reported to the worker as a renewal; every
	// answer of a request reaches the client through the program point "answered" first.
	cli, err := etcdNew(etcdClientConfig(init.Nodes, []grpc.DialOption{
		grpc.WithChainStreamInterceptor(etcdRenewals(reportRenewal)),
		grpc.WithChainUnaryInterceptor(answeredPoints()),
	}))
	if err != nil {
		return nil, fmt.Errorf("etcd: client: %w", err)
	}
	// The built-in designs' prefix, so that clients of every etcd design meet on one lock.
	return &etcdLock{init: init, ttl: int(ttl / time.Second), cli: cli, prefix: "/lockcheck/" + init.Lock}, nil
}

// attemptResult is what one attempt came to.
type attemptResult struct {
	s   *etcdSession
	m   *etcdMutex
	err error
}

// Lock's key after its own Unlock ran (it resets the key to this).
const noKey = "\x00"

func (l *etcdLock) acquire(within time.Duration) answer {
	deadline := time.Now().Add(within)
	l.mu.Lock()
	held, prev := l.held != nil, l.attempt
	l.mu.Unlock()
	if held {
		return unknownf("etcd: this client already holds the lock")
	}
	if prev != nil {
		select {
		case <-prev:
		case <-time.After(time.Until(deadline)):
			return unknownf("etcd: an earlier attempt is still finishing")
		}
	}
	if err := l.flushPending(deadline); err != nil {
		return unknown(err)
	}

	finished := make(chan struct{})
	l.mu.Lock()
	l.attempt = finished
	l.mu.Unlock()
	// Lock's context ends a little early, so that it can delete its key and say so in time, or
	// when lockcheck gives the attempt up (usage step abandon), as a caller's context would.
	slack := min(l.init.timeout(), within/4)
	lockCtx, cancel := context.WithDeadline(attemptContext(), deadline.Add(-slack))
	results := make(chan attemptResult, 1)
	var mu sync.Mutex
	abandoned := false
	go func() {
		defer close(finished)
		defer cancel()
		r := l.try(lockCtx)
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			l.undo(r)
			return
		}
		results <- r
	}()

	var r attemptResult
	select {
	case r = <-results:
	case <-time.After(time.Until(deadline)):
		mu.Lock()
		select {
		case r = <-results:
			mu.Unlock()
		default:
			abandoned = true
			mu.Unlock()
			return unknownf("etcd: no answer in time (the attempt is abandoned and undone when it ends)")
		}
	}
	if r.err != nil {
		return l.failed(deadline, r)
	}
	l.mu.Lock()
	l.held, l.heldSess = r.m, r.s
	l.mu.Unlock()
	a := okToken(createRevision(r.m))
	a.Session = etcdLeaseName(int64(r.s.Lease()))
	return a
}

// try is one attempt, as a user writes it: a session (the current one while it lives), then Lock.
func (l *etcdLock) try(ctx context.Context) attemptResult {
	s, err := l.session()
	if err != nil {
		return attemptResult{err: fmt.Errorf("etcd: NewSession: %w", err)}
	}
	m := etcdNewMutex(s, l.prefix)
	return attemptResult{s: s, m: m, err: m.Lock(ctx)}
}

// session returns the current session, or a new one if there is none or its Done has closed.
func (l *etcdLock) session() (*etcdSession, error) {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	if s != nil && !ended(s) {
		return s, nil
	}
	if s != nil {
		go func() { _ = s.Close() }() // revoke what may be left of the lease
	}
	s, err := etcdNewSession(l.cli, etcdWithTTL(l.ttl))
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.sess = s
	l.mu.Unlock()
	return s, nil
}

func ended(s *etcdSession) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// failed says what an attempt that returned an error came to, deleting a key it may have left.
func (l *etcdLock) failed(deadline time.Time, r attemptResult) answer {
	switch {
	case r.m == nil:
		return unknown(r.err)
	case r.m.Key() == noKey:
		// Lock waited behind other clients' keys until its context ended, then deleted its key.
		return fail(fmt.Sprintf("gave up waiting: %v", r.err))
	case sessionExpired(r.err):
		return unknownf("etcd: Lock: %v (the key went with the lease)", r.err)
	}
	l.deleteKey(deadline, r.m.Key())
	return unknownf("etcd: Lock: %v", r.err)
}

// undo gives back what an abandoned attempt came to.
func (l *etcdLock) undo(r attemptResult) {
	deadline := time.Now().Add(4 * l.init.timeout())
	switch {
	case r.m == nil:
	case r.err == nil:
		key := r.m.Key()
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if err := r.m.Unlock(ctx); err != nil {
			l.addPending(key)
		}
	case r.m.Key() != noKey:
		l.deleteKey(deadline, r.m.Key())
	}
}

// deleteKey deletes a key of ours ("" and Unlock's marker are none), or remembers it.
func (l *etcdLock) deleteKey(deadline time.Time, key string) {
	if key == "" || key == noKey {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(l.init.timeout()))
	defer cancel()
	if _, err := l.cli.Delete(ctx, key); err != nil {
		l.addPending(key)
	}
}

func (l *etcdLock) addPending(key string) {
	l.mu.Lock()
	l.pending = append(l.pending, key)
	l.mu.Unlock()
}

// flushPending deletes keys left behind, before a new attempt queues behind them.
func (l *etcdLock) flushPending(deadline time.Time) error {
	l.mu.Lock()
	todo := l.pending
	l.pending = nil
	l.mu.Unlock()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for i, key := range todo {
		if _, err := l.cli.Delete(ctx, key); err != nil {
			l.mu.Lock()
			l.pending = append(todo[i:], l.pending...)
			l.mu.Unlock()
			return fmt.Errorf("etcd: could not delete a key left by an earlier attempt: %w", err)
		}
	}
	return nil
}

func (l *etcdLock) release(within time.Duration) answer {
	l.mu.Lock()
	m, s := l.held, l.heldSess
	l.held, l.heldSess = nil, nil
	l.mu.Unlock()
	if m == nil {
		return fail("this client does not hold the lock")
	}
	wasEnded := ended(s)
	key := m.Key()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := m.Unlock(ctx); err != nil {
		l.addPending(key) // deleted before the next attempt if still there
		return unknownf("etcd: Unlock: %v", err)
	}
	if wasEnded {
		return fail("the session had ended (its lease expired or could not be renewed), so the key may have gone with it")
	}
	return ok()
}

// usage: the attempt is given up when told (attemptContext ends Lock's context).
func (l *etcdLock) usage() []string { return []string{"abandon"} }

func (l *etcdLock) close() {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	if s != nil {
		s.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), 4*l.init.timeout())
		_, _ = l.cli.Revoke(ctx, s.Lease())
		cancel()
	}
	_ = l.cli.Close()
}

// etcdChecked is the careful user's lock: valid while the session holding it lives.
type etcdChecked struct{ *etcdLock }

func (c etcdChecked) valid(time.Duration) answer {
	c.mu.Lock()
	s := c.heldSess
	c.mu.Unlock()
	switch {
	case s == nil:
		return fail("this client does not hold the lock")
	case ended(s):
		return fail("the session has ended (Session.Done closed)")
	}
	return ok()
}
