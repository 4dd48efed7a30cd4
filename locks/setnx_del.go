package locks

// setnx-del: the bare SETNX lock the Chinese article on Redis locks' common mistakes starts from
// (docs/CLAIMS.md). SETNX takes the key, a plain DEL gives it back. There is no expiry, so a holder
// that dies never frees the lock (every other client starves); and no owner check, so a client that
// releases late deletes whoever holds it now.

import (
	"context"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Design{
		Name:     "setnx-del",
		Summary:  "SETNX key 1 to acquire, DEL key to release; no TTL, no owner check",
		Source:   "Chinese article on Redis locks' common mistakes (the bare SETNX lock it starts from)",
		Token:    "none",
		Nodes:    1,
		Expires:  false,
		Protects: "mutual exclusion while every client lives and releases",
		FailureModes: []string{
			"holder crashes while holding: the key is never deleted, the lock is stuck forever",
			"no fencing token: the resource cannot reject a late writer",
		},
		Scenarios: []string{"no-faults-setnx-del", "crash-holder-setnx-del"},
		New: func(env Env) (Lock, error) {
			return &setnxDel{rdb: dialRedis(env.Nodes[0], env), key: env.Key}, nil
		},
	})
}

type setnxDel struct {
	rdb *redis.Client
	key string
}

func (l *setnxDel) Acquire(ctx context.Context) (*int64, error) {
	ok, err := l.rdb.SetNX(ctx, l.key, 1, 0).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrBusy
	}
	return nil, nil
}

func (l *setnxDel) Release(ctx context.Context) error {
	n, err := l.rdb.Del(ctx, l.key).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (l *setnxDel) Close() error { return l.rdb.Close() }
