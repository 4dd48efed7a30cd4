package main

// redsync_v4.go: github.com/go-redsync/redsync/v4's Mutex (Redlock), at the version lockcheck
// was asked for (v4.0.0 and later), on go-redis v8 clients (redsync's redis/goredis/v8 pool, at
// the go-redis version that redsync version requires).
//
// As a user of a v4 release writes it: LockContext with WithTries(1) (one attempt; the worker
// retries), WithExpiry(the scenario's TTL); UnlockContext to release. Before each access to the
// resource the user extends the lock (ExtendContext), as a holder with long work does; the
// answer to valid is Extend's. That is where redsync PR #61 lived: before v4.0.4, Extend and
// Unlock reported success whatever the scripts answered, so a holder whose lock had expired and
// been taken by another client was told that it still held it.
//
// Only the API every v4 release has is used (later ones added TryLock, Until, ErrTaken), so one
// source serves them all.

import (
	"context"
	"errors"
	"strings"
	"time"

	goredislib "github.com/go-redis/redis/v8"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v8"
)

func main() { serve(newRedsync) }

type redsyncLock struct {
	clients []*goredislib.Client
	mutex   *redsync.Mutex
}

func newRedsync(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("redsync: no Redis nodes")
	}
	l := &redsyncLock{}
	var pools []redis.Pool
	for _, addr := range init.Nodes {
		c := goredislib.NewClient(&goredislib.Options{
			Addr:        addr,
			DialTimeout: init.timeout(), ReadTimeout: init.timeout(), WriteTimeout: init.timeout(),
			MaxRetries: -1, // no retries: an attempt's outcome is the library's, not go-redis's
			PoolSize:   2,
		})
		l.clients = append(l.clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	l.mutex = redsync.New(pools...).NewMutex(init.Lock, redsync.WithExpiry(init.ttl()), redsync.WithTries(1))
	return l, nil
}

func (l *redsyncLock) acquire(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	err := l.mutex.LockContext(ctx)
	switch {
	case err == nil:
		return ok()
	case errors.Is(err, redsync.ErrFailed), strings.Contains(err.Error(), "lock already taken"):
		// No quorum of SETs: the library deleted what it set (ErrTaken in later releases).
		return fail(err.Error())
	}
	return unknown(err)
}

func (l *redsyncLock) release(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	released, err := l.mutex.UnlockContext(ctx)
	switch {
	case released:
		return ok()
	case err == nil:
		return fail("Unlock: false (the lock was not ours any more)")
	}
	return unknown(err)
}

// valid extends the lock by its expiry, as a holder does before going on with its work.
func (l *redsyncLock) valid(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	extended, err := l.mutex.ExtendContext(ctx)
	switch {
	case extended:
		return renewed()
	case err == nil:
		return fail("Extend: false (the lock was not ours any more)")
	}
	return fail("Extend: " + err.Error())
}

func (l *redsyncLock) close() {
	for _, c := range l.clients {
		_ = c.Close()
	}
}
