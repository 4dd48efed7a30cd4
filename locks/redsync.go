package locks

// redsync: github.com/go-redsync/redsync/v4 (v4.18.1), the Go Redlock library people use, run as it
// is. Each node is a goredis/v9 pool over a go-redis client built with lockcheck's settings
// (redisopt via dialRedis: no retries, one connection, commands bounded by their context), so the
// library sees the same network as our own designs.
//
// What is set and why: WithExpiry(ttl) (the scenario's lease instead of 8 s); Acquire calls
// TryLockContext, which is lockContext(ctx, 1): exactly one attempt, no internal retry delay
// (the worker's backoff retries instead), so WithTries is left alone. Everything else keeps its
// default: quorum len/2+1, drift factor 0.01 (validity = expiry − elapsed − expiry×1%: no +2 ms as
// in the Redis docs), timeout factor 0.05 (one context of expiry×5% bounds the whole parallel
// SET round, not each node), 16 random bytes base64 as value, no fail-fast, no shuffling.
// On a failed attempt the library itself runs its delete script on every node.
//
// Errors: *ErrTaken (a majority answered that someone else holds it) is the only certain refusal
// and maps to ErrBusy; anything else (RedisError, a minority of ErrNodeTaken, ErrFailed after a
// majority reached too late) leaves the outcome unknown. Until() is the validity, so it
// implements Expiring — and fails like redlock: a pause after the last validity check outlives
// the lease (K3); the random value is no fencing token (K6).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	goredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Design{
		Name:     "redsync",
		Summary:  "go-redsync/redsync v4 Mutex (Redlock) as it is: TryLockContext, Until, UnlockContext",
		Source:   "github.com/go-redsync/redsync/v4 v4.18.1; Redis docs (Redlock)",
		Promise:  redsyncPromise,
		Token:    "none",
		Nodes:    5,
		Quorum:   true,
		Expires:  true,
		Protects: "crashed holders (keys expire); a minority of nodes down; slow acquisitions (validity check)",
		FailureModes: []string{
			"a pause after the last validity check, before the write, outlives the TTL: double ownership, lost updates (K3)",
			"no fencing token: the random value is not ordered (K6)",
			"the whole SET round is bounded by expiry×5% (20 ms for a 400 ms TTL): a loaded machine makes attempts fail with an unknown outcome",
		},
		Scenarios: []string{"no-faults-redsync", "gc-pause-after-validity-check-redsync", "gc-pause-redsync"},
		New: func(env Env) (Lock, error) {
			l := &redsyncLock{env: env}
			pools := make([]redsyncredis.Pool, 0, len(env.Nodes))
			for _, addr := range env.Nodes {
				rdb := dialRedis(addr, env)
				l.clients = append(l.clients, rdb)
				pools = append(pools, goredis.NewPool(rdb))
			}
			l.mutex = redsync.New(pools...).NewMutex(env.Key, redsync.WithExpiry(env.TTL))
			return l, nil
		},
	})
}

type redsyncLock struct {
	env     Env
	clients []*redis.Client
	mutex   *redsync.Mutex
	held    bool
}

func (l *redsyncLock) Acquire(ctx context.Context) (*int64, error) {
	err := l.mutex.TryLockContext(ctx)
	if err == nil {
		l.held = true
		return nil, nil
	}
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		return nil, fmt.Errorf("%w (redsync: %v)", ErrBusy, err)
	}
	return nil, fmt.Errorf("redsync: outcome unknown: %w", err)
}

// ValidUntil is the mutex's Until(): attempt start + expiry − drift. Zero when nothing is held.
func (l *redsyncLock) ValidUntil() time.Time {
	if !l.held {
		return time.Time{}
	}
	return l.mutex.Until()
}

// Release calls UnlockContext. Its false comes with the per-node reasons joined: a refusal
// (ErrLockAlreadyExpired: no key; ErrNodeTaken or ErrTaken: someone else's) is certain, a
// RedisError is not. ErrNotHeld when the refusals alone make a majority impossible.
func (l *redsyncLock) Release(ctx context.Context) error {
	l.held = false
	ok, err := l.mutex.UnlockContext(ctx)
	if ok {
		return nil
	}
	refused, unknown := redsyncCount(err)
	n := len(l.clients)
	if refused > n-(n/2+1) || unknown == 0 {
		return fmt.Errorf("%w (redsync: %v)", ErrNotHeld, err)
	}
	return fmt.Errorf("redsync: unlock outcome unknown: %w", err)
}

// redsyncCount walks the tree of joined per-node errors redsync returns.
func redsyncCount(err error) (refused, unknown int) {
	switch e := err.(type) {
	case nil:
	case *redsync.ErrTaken:
		refused += len(e.Nodes)
	case *redsync.ErrNodeTaken:
		refused++
	case interface{ Unwrap() []error }:
		for _, one := range e.Unwrap() {
			r, u := redsyncCount(one)
			refused, unknown = refused+r, unknown+u
		}
	default:
		if err == redsync.ErrLockAlreadyExpired {
			refused++
		} else {
			unknown++ // a *RedisError, or anything new
		}
	}
	return refused, unknown
}

func (l *redsyncLock) Close() error {
	var errs error
	for _, rdb := range l.clients {
		errs = errors.Join(errs, rdb.Close())
	}
	return errs
}

// redsyncPromise is the validity redsync computes (Until): the expiry less its drift factor (1%)
// from each acquisition.
var redsyncPromise = Promise{Lease: func(env Env) time.Duration { return env.TTL - env.TTL/100 },
	Words: "the expiry less redsync's drift (1%) from each acquisition"}
