//go:build ignore

// redislock_adapter.go: github.com/bsm/redislock behind lockcheck's lock-client protocol. lockcheck
// builds it with its protocol helper (serve, answers) against the library's version under test.
package main

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

func main() { serve(newLock) }

type lock struct {
	rdb    *redis.Client
	client *redislock.Client
	key    string
	ttl    time.Duration
	held   *redislock.Lock
}

func newLock(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("no Redis node")
	}
	rdb := redis.NewClient(&redis.Options{Addr: init.Nodes[0], DialTimeout: init.timeout(),
		ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: true, MaxRetries: -1})
	return &lock{rdb: rdb, client: redislock.New(rdb), key: init.Lock, ttl: init.ttl()}, nil
}

func (l *lock) acquire(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	held, err := l.client.Obtain(ctx, l.key, l.ttl, nil) // one try: lockcheck retries
	switch {
	case err == nil:
		l.held = held
		return ok()
	case errors.Is(err, redislock.ErrNotObtained):
		return fail(err.Error())
	}
	return unknown(err)
}

func (l *lock) release(within time.Duration) answer {
	if l.held == nil {
		return fail("not held")
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	err := l.held.Release(ctx)
	switch {
	case err == nil:
		l.held = nil
		return ok()
	case errors.Is(err, redislock.ErrLockNotHeld):
		l.held = nil
		return fail(err.Error())
	}
	return unknown(err)
}

// valid asks whether the lock is still ours (its TTL left), as a careful holder does before it
// writes.
func (l *lock) valid(within time.Duration) answer {
	if l.held == nil {
		return fail("not held")
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ttl, err := l.held.TTL(ctx)
	switch {
	case err != nil:
		return fail(err.Error())
	case ttl <= 0:
		return fail("the lock expired")
	}
	return ok()
}

func (l *lock) close() { _ = l.rdb.Close() }
