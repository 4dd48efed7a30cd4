package locks

// redislock: github.com/bsm/redislock v0.9.4, the single-instance Go lock library, run as it is.
// Obtain runs its script (SET key <16 random bytes> NX PX ttl, or re-SET if the value already
// starts with our token); Release runs a compare-and-delete. The
// go-redis client handed to the library is built with dialRedis (redisopt: no retries, one
// connection, commands bounded by their context), so it sees the same network as our own designs.
//
// What is set and why: the scenario's TTL as the lease; RetryStrategy NoRetry, so Obtain makes
// exactly one attempt (the worker's backoff retries instead); no Refresh (the library has no
// watchdog; nothing renews unless the caller does). ErrNotObtained is the only certain refusal
// and maps to ErrBusy; ErrLockNotHeld maps to ErrNotHeld. v0.9.4 has no fencing token (its
// "Token" is the random lock value, not ordered: newer versions add an INCR fence), so Token is
// "none".
//
// How it fails: as every lease (A1, K2): a holder paused past the TTL resumes and writes; the
// random value cannot fence the resource.

import (
	"context"
	"errors"
	"fmt"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Design{
		Name:     "redislock",
		Summary:  "bsm/redislock v0.9.4 as it is: Obtain (SET NX PX, no retry), Release (compare-and-delete)",
		Source:   "github.com/bsm/redislock v0.9.4",
		Token:    "none",
		Nodes:    1,
		Expires:  true,
		Points:   nil, // none of its own
		Protects: "crashed holders (the key expires) and releasing another client's lock (the value is checked)",
		FailureModes: []string{
			"a holder paused past the TTL keeps believing it holds: double ownership, lost updates (K2, A1)",
			"no fencing token in v0.9.4: the random value is not ordered (K6), the resource cannot reject a late writer",
		},
		Scenarios: []string{"no-faults-redislock", "gc-pause-redislock"},
		New: func(env Env) (Lock, error) {
			rdb := dialRedis(env.Nodes[0], env)
			return &redisLockLib{rdb: rdb, client: redislock.New(rdb), env: env}, nil
		},
	})
}

type redisLockLib struct {
	rdb    *redis.Client
	client *redislock.Client
	env    Env
	held   *redislock.Lock
}

func (l *redisLockLib) Acquire(ctx context.Context) (*int64, error) {
	lk, err := l.client.Obtain(ctx, l.env.Key, l.env.TTL, &redislock.Options{RetryStrategy: redislock.NoRetry()})
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, fmt.Errorf("%w (%v)", ErrBusy, err)
	case err != nil:
		return nil, err
	}
	l.held = lk
	return nil, nil
}

func (l *redisLockLib) Release(ctx context.Context) error {
	if l.held == nil {
		return ErrNotHeld
	}
	err := l.held.Release(ctx)
	switch {
	case errors.Is(err, redislock.ErrLockNotHeld):
		l.held = nil
		return fmt.Errorf("%w (%v)", ErrNotHeld, err)
	case err != nil:
		return err
	}
	l.held = nil
	return nil
}

func (l *redisLockLib) Close() error { return l.rdb.Close() }
