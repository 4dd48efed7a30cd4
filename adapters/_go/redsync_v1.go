package main

// redsync_v1.go: github.com/go-redsync/redsync's Mutex (Redlock) of the v1 releases, at the
// version lockcheck was asked for, on redigo pools (the client those releases are written for, at
// the version they require).
//
// As a user of a v1 release writes it: Lock with SetTries(1) (one attempt; the worker retries) and
// SetExpiry(the scenario's TTL); Unlock to release; before each access to the resource the
// holder extends the lock (Extend), and the answer to valid is Extend's. The v1 API takes no
// context: every command is bounded by redigo's connect, read and write timeouts instead. Up to
// v1.2.0, Extend and Unlock compared the script's integer reply with 0 as an interface value,
// which is never equal, so both reported success on a lock that was no longer ours (redsync
// PR #38, fixed in v1.3.0). v1.4 made Unlock and Extend return an error too: one source serves
// both signatures, chosen at run time.

import (
	"errors"
	"time"

	"github.com/go-redsync/redsync"
	"github.com/gomodule/redigo/redis"
)

func main() { serve(newRedsyncV1) }

type redsyncV1Lock struct {
	pools []*redis.Pool
	mutex *redsync.Mutex
}

func newRedsyncV1(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("redsync: no Redis nodes")
	}
	l := &redsyncV1Lock{}
	var pools []redsync.Pool
	for _, addr := range init.Nodes {
		addr := addr
		timeout := init.timeout()
		p := &redis.Pool{
			MaxIdle:     2,
			IdleTimeout: time.Minute,
			Dial: func() (redis.Conn, error) {
				return redis.Dial("tcp", addr, redis.DialConnectTimeout(timeout),
					redis.DialReadTimeout(timeout), redis.DialWriteTimeout(timeout))
			},
		}
		l.pools = append(l.pools, p)
		pools = append(pools, p)
	}
	l.mutex = redsync.New(pools).NewMutex(init.Lock, redsync.SetExpiry(init.ttl()), redsync.SetTries(1))
	return l, nil
}

// acquire: Lock's only error is ErrFailed, whether the nodes said no or could not be reached
// (the v1 API does not tell them apart); with every node up it means busy.
func (l *redsyncV1Lock) acquire(time.Duration) answer {
	if err := l.mutex.Lock(); err != nil {
		return fail(err.Error())
	}
	return ok()
}

func (l *redsyncV1Lock) release(time.Duration) answer {
	var m any = l.mutex
	switch m := m.(type) {
	case interface{ Unlock() bool }: // up to v1.3
		if m.Unlock() {
			return ok()
		}
	case interface{ Unlock() (bool, error) }: // v1.4
		released, err := m.Unlock()
		if released {
			return ok()
		}
		if err != nil {
			return unknown(err)
		}
	}
	return fail("Unlock: false (the lock was not ours any more, or a node did not answer)")
}

// valid extends the lock by its expiry, as a holder does before going on with its work.
func (l *redsyncV1Lock) valid(time.Duration) answer {
	var m any = l.mutex
	switch m := m.(type) {
	case interface{ Extend() bool }: // up to v1.3
		if m.Extend() {
			return renewed()
		}
	case interface{ Extend() (bool, error) }: // v1.4
		extended, err := m.Extend()
		if extended {
			return renewed()
		}
		if err != nil {
			return fail("Extend: " + err.Error())
		}
	}
	return fail("Extend: false (the lock was not ours any more, or a node did not answer)")
}

func (l *redsyncV1Lock) close() {
	for _, p := range l.pools {
		_ = p.Close()
	}
}
