package locks

// get-del: M4 in docs/CLAIMS.md, the fourth of the common mistakes in the Chinese article on Redis
// locks (its second "錯誤解鎖", wrong way to unlock). The lock is taken exactly as set-nx-px does (SET
// key <random> NX PX ttl and INCR of <key>:token for a fencing token, in one script), but it is
// released with two commands: GET the key, compare the value in the client, then DEL. Between the GET and the DEL
// the key can expire and another client can take it; the late DEL then deletes that client's lock,
// a third client takes it, and two clients that never stalled both believe they hold the lock. The
// connection uses lockcheck's go-redis settings (dialRedis: no retries, context-bounded commands).

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// BetweenGetAndDel is the program point after the release's GET saw our own value and before its
// DEL.
const BetweenGetAndDel = "between-get-and-del"

func init() {
	Register(Design{
		Name:      "get-del",
		Summary:   "SET key <random> NX PX ttl + INCR token; release by GET, compare in the client, then DEL",
		Source:    "Chinese article on Redis locks' common mistakes, M4 (GET then DEL is not atomic)",
		Token:     "INCR of <key>:token at acquire",
		Nodes:     1,
		Expires:   true,
		Reentrant: false,
		Points:    []string{BetweenGetAndDel},
		Protects:  "crashed holders (the key expires); a release long after expiry finds another value and deletes nothing",
		FailureModes: []string{
			"holder stalls between its GET and its DEL past the TTL: the DEL deletes the next holder's lock, and two clients that never stalled hold " +
				"it at once",
			"holder paused past the TTL keeps believing it holds: double ownership (K2, K3)",
		},
		Scenarios: []string{"no-faults-get-del", "debate/mistake-get-then-del"},
		New: func(env Env) (Lock, error) {
			return &getDel{setNxPx: &setNxPx{rdb: dialRedis(env.Nodes[0], env), env: env}}, nil
		},
	})
}

// getDel takes the lock with set-nx-px's own Acquire; only the release differs.
type getDel struct {
	*setNxPx
}

func (l *getDel) Release(ctx context.Context) error {
	v, err := l.rdb.Get(ctx, l.env.Key).Result()
	if err == redis.Nil {
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	if v != l.value {
		return ErrNotHeld
	}
	l.env.Point(BetweenGetAndDel)
	n, err := l.rdb.Del(ctx, l.env.Key).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld // expired meanwhile and nobody took it
	}
	return nil // deleted a key: ours, or whoever's is there now
}
