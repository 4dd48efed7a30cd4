package mylock_test

// mylock_test.go: YOUR lock, as lockcheck sees it. lockcheck builds one of these per client (each
// client is a process of its own: this test binary, started again) and calls Acquire and Release
// while it injects faults. Replace the body of each method with calls to your own lock; keep the
// contract: Acquire makes one attempt, returns lockchecktest.ErrBusy when another client
// certainly holds the lock, and any other error when the outcome is unknown.
//
// As written it is Redis's single-instance lock on go-redis: SET key <random> NX PX ttl to take, a
// fencing token from INCR, release by compare-and-delete. It passes every check of
// lockcheck_test.go.

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/lockchecktest"
)

type myLock struct {
	env   lockchecktest.Env
	rdb   *redis.Client
	value string
}

// newMyLock builds one client's lock. env has the lock service's addresses as this client
// reaches them (through its own proxies, so partitions hit it), the key, the TTL, a bound on each
// command, and the client's own clock (read time through env.Now).
func newMyLock(env lockchecktest.Env) (lockchecktest.Lock, error) {
	rdb := redis.NewClient(&redis.Options{Addr: env.Nodes[0], DialTimeout: env.Timeout,
		ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: true, MaxRetries: -1}) // bounded by the caller's context
	return &myLock{env: env, rdb: rdb}, nil
}

// Acquire returns the fencing token (nil when the lock hands out none).
func (l *myLock) Acquire(ctx context.Context) (*int64, error) {
	b := make([]byte, 16)
	rand.Read(b)
	value := hex.EncodeToString(b)
	ok, err := l.rdb.SetNX(ctx, l.env.Key, value, l.env.TTL).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, lockchecktest.ErrBusy
	}
	l.value = value
	token, err := l.rdb.Incr(ctx, l.env.Key+":token").Result()
	return &token, err
}

var compareAndDelete = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// Release returns lockchecktest.ErrNotHeld when the lock was no longer this client's.
func (l *myLock) Release(ctx context.Context) error {
	n, err := compareAndDelete.Run(ctx, l.rdb, []string{l.env.Key}, l.value).Int()
	if err == nil && n == 0 {
		return lockchecktest.ErrNotHeld
	}
	return err
}

func (l *myLock) Close() error { return l.rdb.Close() }
