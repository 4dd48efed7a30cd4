//go:build ignore

// go-etcd-lock_adapter.go: github.com/Scalingo/go-etcd-lock (package lock) behind lockcheck's
// lock-client protocol, on etcd. lockcheck builds it with its protocol helper (serve, answers)
// against the library's version under test.
//
// The library's Acquire(key, ttl) makes a concurrency.Session (a lease of ttl seconds, kept alive
// by the etcd client) and takes a concurrency.Mutex on it, waiting at most its tryLockTimeout for
// the holder to leave ("key is already locked" after that). The lock it returns releases itself
// ttl seconds after it was taken (a timer in the holder's process), whatever the holder is doing;
// Release unlocks and closes the session. The library says nothing of the mutex's revision (no
// fencing token) and cannot tell whether a lock is still held (no valid).
//
// Only the API both v5.0.8 and v5.1.0 have is used (Acquire, Release, the locker's options).
package main

import (
	"errors"
	"strings"
	"time"

	etcdlock "github.com/Scalingo/go-etcd-lock/v5/lock"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func main() { serve(newLock) }

type result struct {
	held etcdlock.Lock
	err  error
}

type lock struct {
	cli    *clientv3.Client
	locker etcdlock.Locker
	key    string
	ttl    int // whole seconds: the session's lease and the library's own release timer
	held   etcdlock.Lock
}

func newLock(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("no etcd node")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: init.Nodes, DialTimeout: init.timeout()})
	if err != nil {
		return nil, err
	}
	ttl := int((init.ttl() + time.Second - 1) / time.Second) // etcd's leases are whole seconds
	if ttl < 1 {
		ttl = 1
	}
	return &lock{cli: cli, key: init.Lock, ttl: ttl}, nil
}

// acquire: one Acquire (no WaitAcquire: lockcheck retries). The locker is made for the request's
// time: a Mutex.Lock waits at most half of it for the holder, and a failing etcd is retried
// (every 50 ms) for at most half of it. Acquire takes no context in v5.0.8 and its session's
// Grant is bounded by nothing of ours, so the call runs beside the request: if it has not
// answered within the request's time the outcome is unknown, and a lock it takes later is
// released at once.
func (l *lock) acquire(within time.Duration) answer {
	if l.held != nil {
		return fail("already held")
	}
	locker := etcdlock.NewEtcdLocker(l.cli,
		etcdlock.WithTryLockTimeout(within/2),
		etcdlock.WithMaxTryLockTimeout(within/2),
		etcdlock.WithCooldownTryLockDuration(50*time.Millisecond))
	done := make(chan result, 1)
	go func() {
		held, err := locker.Acquire(l.key, l.ttl)
		done <- result{held, err}
	}()
	select {
	case r := <-done:
		var busy *etcdlock.ErrAlreadyLocked
		switch {
		case r.err == nil:
			l.held = r.held
			return ok()
		case errors.As(r.err, &busy):
			return fail(r.err.Error())
		}
		return unknown(r.err)
	case <-time.After(within):
		go func() { // too late to count: give back whatever it took
			if r := <-done; r.err == nil {
				if err := r.held.Release(); err != nil {
					logf("releasing a lock taken too late: %v", err)
				}
			}
		}()
		return unknownf("Acquire did not return within %s", within)
	}
}

// release: the library's Release (Mutex.Unlock, then Session.Close), bounded by the request's
// time. v5.0.8 returns Unlock's error only: nil for a lock that its own timer already released
// or whose lease ended. v5.1.0 joins Unlock's and Session.Close's errors, and with etcd's client
// v3.6 Unlock says when the lock was already released: either means it was not held any more.
func (l *lock) release(within time.Duration) answer {
	if l.held == nil {
		return fail("not held")
	}
	held := l.held
	l.held = nil
	done := make(chan error, 1)
	go func() { done <- held.Release() }()
	select {
	case err := <-done:
		switch {
		case err != nil && lost(err):
			return fail("not held: " + err.Error())
		case err != nil:
			return unknown(err)
		}
		return ok()
	case <-time.After(within):
		return unknownf("Release did not return within %s", within)
	}
}

// lost: the error says the lock was not held any more (etcd client v3.6's
// concurrency.ErrLockReleased, which v3.5 does not have, or the session's lease already gone).
func lost(err error) bool {
	return strings.Contains(err.Error(), "lock has already been released") ||
		strings.Contains(err.Error(), "requested lease not found")
}

func (l *lock) close() { _ = l.cli.Close() }
