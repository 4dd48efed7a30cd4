//go:build ignore

// libkv_adapter.go: github.com/docker/libkv's ZooKeeper store lock (store/zookeeper) behind
// lockcheck's lock-client protocol. lockcheck builds it with its protocol helper (serve, answers)
// against the library's version under test.
//
// libkv's NewLock wraps the ZooKeeper client's lock recipe (zk.NewLock: an ephemeral sequential
// node under the key, the lowest holds); its Lock waits until it holds (it ignores its stop
// channel), then sets the lock's value on the key's node; Unlock deletes the node. The client is
// github.com/samuel/go-zookeeper in v0.2.1 and github.com/go-zookeeper/zk from December 2021 on:
// that is the change between the two versions checked. The library hands out no fencing token
// (the node's path is not exported), and the channel Lock returns is never closed, so it cannot
// say whether a lock is still held (no valid).
package main

import (
	"errors"
	"strings"
	"time"

	"github.com/docker/libkv"
	"github.com/docker/libkv/store"
	"github.com/docker/libkv/store/zookeeper"
)

func main() { serve(newLock) }

type lock struct {
	nodes []string
	key   string
	ttl   time.Duration
	kv    store.Store // nil once an attempt that did not answer in time closed its session
	held  store.Locker
}

func newLock(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("no ZooKeeper node")
	}
	zookeeper.Register()
	l := &lock{nodes: init.Nodes, key: init.Lock, ttl: init.ttl()}
	if err := l.connect(); err != nil {
		return nil, err
	}
	return l, nil
}

// connect makes the library's store: one ZooKeeper session whose timeout is the run's TTL.
func (l *lock) connect() error {
	kv, err := libkv.NewStore(store.ZK, l.nodes, &store.Config{ConnectionTimeout: l.ttl})
	if err != nil {
		return err
	}
	l.kv = kv
	return nil
}

// acquire: NewLock, then Lock, which waits in the recipe's queue for as long as it takes. One
// attempt is the request's time: when Lock has not returned by then, the store is closed (the
// session ends, and the servers delete its queued node; Lock returns an error) and the next
// attempt opens a new one. The outcome is then unknown.
func (l *lock) acquire(within time.Duration) answer {
	if l.held != nil {
		return fail("already held")
	}
	if l.kv == nil {
		if err := l.connect(); err != nil {
			return unknown(err)
		}
	}
	locker, err := l.kv.NewLock(l.key, &store.LockOptions{Value: []byte("lockcheck")})
	if err != nil {
		return unknown(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := locker.Lock(nil) // the ZooKeeper store ignores the stop channel
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			// Lock can fail after its node became the lowest (its Set of the value failed):
			// end the session so that a lock it may hold is not kept by nobody.
			l.kv.Close()
			l.kv = nil
			return unknown(err)
		}
		l.held = locker
		return ok()
	case <-time.After(within):
		l.kv.Close() // ends the session and, with it, the queued node (or a lock taken just now)
		l.kv = nil
		go func() { <-done }()
		return unknownf("Lock did not return within %s: session closed", within)
	}
}

// release: the library's Unlock (a delete of the lock's node), bounded by the request's time.
func (l *lock) release(within time.Duration) answer {
	if l.held == nil {
		return fail("not held")
	}
	held := l.held
	l.held = nil
	done := make(chan error, 1)
	go func() { done <- held.Unlock() }()
	select {
	case err := <-done:
		switch {
		case err != nil && strings.Contains(err.Error(), "node does not exist"): // zk.ErrNoNode of either client
			return fail("not held: " + err.Error())
		case err != nil:
			return unknown(err)
		}
		return ok()
	case <-time.After(within):
		return unknownf("Unlock did not return within %s", within)
	}
}

func (l *lock) close() {
	if l.kv != nil {
		l.kv.Close()
	}
}
