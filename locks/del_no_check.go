package locks

// del-no-check: M3 in docs/CLAIMS.md, the third of the common mistakes in the Chinese article on
// Redis locks (its first "錯誤解鎖", wrong way to unlock, which it calls the most typical). The lock is
// taken exactly as set-nx-px does (SET key <random> NX PX ttl and INCR of <key>:token, in one
// script), but released with a plain DEL that never checks whose lock it is. A holder that overruns its TTL (a
// pause, a slow critical section) and then releases deletes the lock of whoever holds it now; a
// third client takes it, and two clients that never stalled hold the lock at once. Under contention
// it cascades: the client whose lock was deleted releases with a DEL too, deleting its successor's,
// and so on (debate/mistake-del-without-owner-check: one overrun, overlapping holders to the end of
// the run). The connection uses lockcheck's go-redis settings (dialRedis: no retries,
// context-bounded commands).

import (
	"context"
)

func init() {
	Register(Design{
		Name:      "del-no-check",
		Summary:   "SET key <random> NX PX ttl + INCR token; release by plain DEL, no owner check",
		Source:    "Chinese article on Redis locks' common mistakes, M3 (DEL without checking the owner)",
		Token:     "INCR of <key>:token at acquire",
		Nodes:     1,
		Expires:   true,
		Reentrant: false,
		Protects:  "crashed holders (the key expires)",
		FailureModes: []string{
			"a holder that overruns its TTL deletes the current holder's lock when it releases: double ownership among clients that never stalled",
			"under contention it cascades: each holder whose lock was deleted deletes its successor's when it releases",
			"holder paused past the TTL keeps believing it holds: double ownership (K2, K3)",
		},
		Scenarios: []string{"no-faults-del-no-check", "debate/mistake-del-without-owner-check"},
		New: func(env Env) (Lock, error) {
			return &delNoCheck{setNxPx: &setNxPx{rdb: dialRedis(env.Nodes[0], env), env: env}}, nil
		},
	})
}

// delNoCheck takes the lock with set-nx-px's own Acquire; only the release differs.
type delNoCheck struct {
	*setNxPx
}

func (l *delNoCheck) Release(ctx context.Context) error {
	n, err := l.rdb.Del(ctx, l.env.Key).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld // expired and nobody took it; had someone, their lock would be gone now
	}
	return nil
}
