package locks

// getset: the SETNX + GETSET time stamp lock, M2 in docs/CLAIMS.md (the Chinese article on Redis
// locks' common mistakes; the Chinese notes on ZooKeeper and Redis locks recommend it as "double
// anti-deadlock"). The value is the expiry time the client computed with its own clock; there is no
// Redis TTL and no owner identity. A client that finds the value in the past takes the lock over
// with GETSET, and wins only if the old value GETSET handed back was still expired (so of two
// clients racing, one wins). Release DELs the key, but only while the client's own expiry has not
// passed.
//
// It is only as good as the clients' clocks: a client whose clock runs ahead sees every lock as
// expired and takes it from its holder (as the article says, client clocks must be synchronized),
// and the old holder, whose own clock says its lease is still good, then DELs the thief's lock.

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Design{
		Name:    "getset",
		Summary: "SETNX key <expiry by client clock>; if expired, GETSET and win if the old value was expired; DEL if own expiry not passed",
		Source:  "Chinese article on Redis locks' common mistakes, M2; Chinese notes on ZooKeeper and Redis locks (\"double anti-deadlock\")",
		// The expiry is the value a client wrote, by its own clock; every client's clock keeps it.
		Promise:  Promise{ClientClocks: true, Words: "the TTL from each acquisition, by the clients' own clocks"},
		Token:    "none",
		Nodes:    1,
		Expires:  true,
		Points:   []string{"between-get-and-getset"},
		Protects: "a crashed holder (others take over once its expiry time passes), without a Redis TTL",
		FailureModes: []string{
			"a client whose clock runs ahead takes a held lock over with GETSET: double ownership",
			"no owner identity: a holder whose lock was taken over DELs the new holder's lock",
			"a holder paused past its expiry keeps believing it holds (K2)",
		},
		Scenarios: []string{"no-faults-getset", "debate/mistake-client-clock-getset", "clock-jump-getset"},
		New: func(env Env) (Lock, error) {
			return &getsetLock{rdb: dialRedis(env.Nodes[0], env), env: env}, nil
		},
	})
}

type getsetLock struct {
	rdb     *redis.Client
	env     Env
	expires int64 // ms since the epoch by this client's clock, the value it wrote
}

func (l *getsetLock) nowMs() int64 { return l.env.Now().UnixMilli() }

func (l *getsetLock) Acquire(ctx context.Context) (*int64, error) {
	now := l.nowMs()
	expires := now + l.env.TTL.Milliseconds() + 1
	value := strconv.FormatInt(expires, 10)
	ok, err := l.rdb.SetNX(ctx, l.env.Key, value, 0).Result()
	if err != nil {
		return nil, err
	}
	if ok {
		l.expires = expires
		return nil, nil
	}
	current, err := l.rdb.Get(ctx, l.env.Key).Int64()
	if errors.Is(err, redis.Nil) {
		return nil, ErrBusy // released between our SETNX and GET: try again
	}
	if err != nil {
		return nil, err
	}
	if current >= now {
		return nil, ErrBusy // still valid by our clock
	}
	l.env.Point("between-get-and-getset")
	old, err := l.rdb.GetSet(ctx, l.env.Key, value).Int64()
	if errors.Is(err, redis.Nil) {
		// The key vanished and GETSET created it: we hold it (nobody else can, SETNX fails now).
		l.expires = expires
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if old < now {
		l.expires = expires
		return nil, nil
	}
	// Another client took it over first. Our GETSET still moved its expiry a little: harmless,
	// says the seed, since both values are about the same.
	return nil, ErrBusy
}

func (l *getsetLock) Release(ctx context.Context) error {
	if l.nowMs() >= l.expires {
		return ErrNotHeld // our lease is over by our own clock: someone may hold it now
	}
	n, err := l.rdb.Del(ctx, l.env.Key).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (l *getsetLock) Close() error { return l.rdb.Close() }
