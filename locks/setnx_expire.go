package locks

// setnx-expire: M1 in docs/CLAIMS.md, the first of the common mistakes in the Chinese article on
// Redis locks (its first "錯誤加鎖", wrong way to lock). SETNX key <random> takes the key, then a
// second command gives it its TTL. The two commands are not atomic: a client that dies (or whose
// EXPIRE fails) between them leaves a key with no expiry, and every other client starves for good,
// exactly like setnx-del after a crash. The article sends EXPIRE in seconds; lockcheck's TTLs are a
// few hundred milliseconds, so the second command is PEXPIRE: the mistake (two commands) is the
// same. Release is the article's correct Lua compare-and-delete, so the acquire is the only
// mistake. No fencing token. The connection uses lockcheck's go-redis settings (dialRedis: no
// retries, context-bounded commands).

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// BetweenSetnxAndExpire is the program point after SETNX took the key and before EXPIRE gives it
// a TTL: a client killed here leaves a lock that never expires.
const BetweenSetnxAndExpire = "between-setnx-and-expire"

func init() {
	Register(Design{
		Name:      "setnx-expire",
		Summary:   "SETNX key <random>, then PEXPIRE key ttl as a second command; Lua compare-and-delete release",
		Source:    "Chinese article on Redis locks' common mistakes, M1 (SETNX then EXPIRE: a crash in between deadlocks)",
		Token:     "none",
		Nodes:     1,
		Expires:   true,
		Reentrant: false,
		Points:    []string{BetweenSetnxAndExpire},
		Protects:  "crashed holders, but only if they die after the EXPIRE; deleting another client's lock (owner check)",
		FailureModes: []string{
			"client dies (or its EXPIRE fails) between SETNX and EXPIRE: the key never expires, every other client starves",
			"holder paused past the TTL keeps believing it holds, and there is no fencing token (K2)",
		},
		Scenarios: []string{"no-faults-setnx-expire", "debate/mistake-setnx-then-expire"},
		New: func(env Env) (Lock, error) {
			return &setnxExpire{rdb: dialRedis(env.Nodes[0], env), env: env}, nil
		},
	})
}

type setnxExpire struct {
	rdb   *redis.Client
	env   Env
	value string
}

func (l *setnxExpire) Acquire(ctx context.Context) (*int64, error) {
	value := randomValue()
	took, err := l.rdb.Do(ctx, "setnx", l.env.Key, value).Int()
	if err != nil {
		return nil, err
	}
	if took == 0 {
		return nil, ErrBusy
	}
	l.value = value
	l.env.Point(BetweenSetnxAndExpire)
	if err := l.rdb.PExpire(ctx, l.env.Key, l.env.TTL).Err(); err != nil {
		// The seed's mistake as written: nothing undoes the SETNX, so the key stays without a TTL.
		return nil, errors.Join(errors.New("took the key but could not set its expiry"), err)
	}
	return nil, nil
}

func (l *setnxExpire) Release(ctx context.Context) error {
	return deleteIfOwner(ctx, l.rdb, l.env.Key, l.value)
}

func (l *setnxExpire) Close() error { return l.rdb.Close() }
