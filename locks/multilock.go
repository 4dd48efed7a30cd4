package locks

// multilock: Redisson's RedissonMultiLock over N independent Redis primaries (the Chinese article
// on Redis locks and Redisson describes MultiLock next to RedLock): the lock is held only when
// EVERY node's lock is held. Like Redisson it walks the nodes in order, taking each with SET key
// <random> NX PX ttl, and at the first refusal or failure gives back what it took (and the node
// whose answer it did not get: Redisson unlocks that one too on a response timeout). Walking in the
// same order makes contenders meet at node 1 first, so two clients rarely split the nodes between
// them.
//
// Requiring all nodes makes it less available than Redlock (one node down and nobody can lock)
// and no safer: there is no validity computation (Redisson has none), so the client never knows
// its hold ended, and like every lease a holder paused past the TTL keeps working (K2, K3). Its
// value is random: no fencing token. Every node is reached with lockcheck's go-redis settings
// (dialRedis).

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Design{
		Name:     "multilock",
		Summary:  "SET NX PX <random> on every one of N nodes in order; all or nothing; release what was taken on failure",
		Source:   "Redisson RedissonMultiLock; Chinese article on Redis locks and Redisson (MultiLock: every master locked)",
		Token:    "none",
		Nodes:    5,
		AnyNodes: true,
		Expires:  true,
		Protects: "crashed holders (keys expire); the loss of any single node's key (every node must be held)",
		FailureModes: []string{
			"a holder paused past the TTL keeps believing it holds and writes: double ownership, lost updates (K2, K3)",
			"any one node down or unreachable and nobody can take the lock",
			"no fencing token: the random value is not ordered (K6)",
		},
		Scenarios: []string{"no-faults-multilock", "gc-pause-before-write-multilock"},
		New: func(env Env) (Lock, error) {
			l := &multilock{env: env}
			for _, addr := range env.Nodes {
				l.nodes = append(l.nodes, dialRedis(addr, env))
			}
			return l, nil
		},
	})
}

type multilock struct {
	env   Env
	nodes []*redis.Client
	value string
}

func (l *multilock) Acquire(ctx context.Context) (*int64, error) {
	value := randomValue()
	for i, rdb := range l.nodes {
		ok, err := rdb.SetNX(ctx, l.env.Key, value, l.env.TTL).Result()
		if err == nil && ok {
			continue
		}
		// Give back nodes 1..i (i itself in case its SET landed but the reply was lost), even if
		// ctx is over.
		_, _ = redlockOnAll(context.WithoutCancel(ctx), l.nodes[:i+1], l.env.Timeout, redlockDeleteIfOwner(l.env.Key, value))
		if err != nil {
			return nil, fmt.Errorf("multilock: node %d: %w", i+1, err)
		}
		return nil, ErrBusy
	}
	l.value = value
	return nil, nil
}

// Release deletes our value on every node: nil if every node still held it, ErrNotHeld if any
// node answered that it did not (the lock was no longer held as a whole), else unknown.
func (l *multilock) Release(ctx context.Context) error {
	got, errs := redlockOnAll(ctx, l.nodes, 0, redlockDeleteIfOwner(l.env.Key, l.value))
	switch {
	case got.yes == len(l.nodes):
		return nil
	case got.no > 0:
		return ErrNotHeld
	default:
		return errors.Join(fmt.Errorf("multilock: release: %v", got), errs)
	}
}

func (l *multilock) Close() error {
	var errs error
	for _, rdb := range l.nodes {
		errs = errors.Join(errs, rdb.Close())
	}
	return errs
}
