package locks

// get-then-set: the first design of the Japanese article on designing a Redis lock
// (docs/CLAIMS.md, M5): GET the key, and if it is empty, SET it. The article shows it only to say
// why it is wrong: between the GET and the SET another client can also find the key empty, and
// both SET it and both believe they hold the lock, with no fault at all. The check and the set
// must be one atomic command (SET NX), which the article moves on to.
//
// As the article writes it, the SET has no expiry (a dead holder leaves the lock taken forever).
// Its release is a plain DEL; here the release is set-nx-px's compare-and-delete of the holder's
// random value instead, so that the one mistake measured is the acquire's. With a plain DEL every
// race cascades: the first of the two holders to release deletes the other's key, the next GET
// finds it empty, and a third client joins the holder still working (M3's mistake, measured by
// del-no-check). One attempt is one GET (and a SET when it saw nothing); a busy attempt returns
// ErrBusy and the worker tries again after its backoff, as the article's loop waits and retries.

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// BetweenGetAndSet is the program point after the acquire's GET found the key empty and before
// its SET: the window of the race.
const BetweenGetAndSet = "between-get-and-set"

func init() {
	Register(Design{
		Name:     "get-then-set",
		Summary:  "GET key; if empty, SET key <random>; no TTL; Lua compare-and-delete release; the acquire is not atomic",
		Source:   "Japanese article on designing a Redis lock (the GET-then-SET design it starts from), M5",
		Token:    "none",
		Nodes:    1,
		Expires:  false,
		Points:   []string{BetweenGetAndSet},
		Protects: "nothing reliably: two clients can both see the key empty",
		FailureModes: []string{
			"two clients GET the empty key before either SETs it: both take the lock, with no fault at all (M5); the later SET's value wins, so the " +
				"other's release deletes nothing",
			"holder crashes while holding: the key has no TTL, the lock is stuck forever",
			"no fencing token: the resource cannot reject the second holder's writes",
		},
		Scenarios: []string{"race-get-then-set"},
		New: func(env Env) (Lock, error) {
			return &getThenSet{rdb: dialRedis(env.Nodes[0], env), env: env}, nil
		},
	})
}

type getThenSet struct {
	rdb   *redis.Client
	env   Env
	value string // the value of our last SET
}

func (l *getThenSet) Acquire(ctx context.Context) (*int64, error) {
	err := l.rdb.Get(ctx, l.env.Key).Err()
	switch {
	case err == nil:
		return nil, ErrBusy // someone's value is there
	case !errors.Is(err, redis.Nil):
		return nil, err
	}
	l.env.Point(BetweenGetAndSet)
	value := randomValue()
	if err := l.rdb.Set(ctx, l.env.Key, value, 0).Err(); err != nil {
		return nil, err
	}
	l.value = value
	return nil, nil
}

func (l *getThenSet) Release(ctx context.Context) error {
	return deleteIfOwner(ctx, l.rdb, l.env.Key, l.value)
}

func (l *getThenSet) Close() error { return l.rdb.Close() }
