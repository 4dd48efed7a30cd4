package locks

// watch-multi: the optimistic release of the Japanese article on designing a Redis lock
// (docs/CLAIMS.md). The lock is taken exactly as set-nx-px does (SET key <random> NX PX ttl, then
// INCR of <key>:token); it is released with
//
//	WATCH key; GET key; if the value is ours: MULTI; DEL key; EXEC   (else UNWATCH)
//
// The article then says this still does not work, because WATCH would only take effect once a
// transaction is opened, and moves to a Lua script. On a real Redis (7.0 here) that is not so:
// WATCH takes effect when it is sent, on its connection. If the key expires or another client takes
// it after our WATCH, EXEC aborts; if it was already someone else's, the GET sees another value. So
// this release never deletes another client's lock, as long as WATCH, GET and MULTI/EXEC share one
// connection: rdb.Watch runs them on one connection taken from the client's pool for the whole
// transaction. (With a connection pool that sends WATCH on one connection and MULTI/EXEC on
// another, nothing is protected; locks/watch_multi_test.go shows both.) What it cannot prevent is
// what no lease prevents: a holder paused past the TTL keeps working (K2). The connection uses
// lockcheck's go-redis settings (dialRedis: no retries, context-bounded commands); the transaction
// inherits them.

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// BetweenGetAndMulti is the program point after the release's GET (under WATCH) saw our own value
// and before MULTI/DEL/EXEC.
const BetweenGetAndMulti = "between-get-and-multi"

func init() {
	Register(Design{
		Name:      "watch-multi",
		Summary:   "SET key <random> NX PX ttl + INCR token; release by WATCH, GET, compare, MULTI DEL EXEC",
		Source:    "Japanese article on designing a Redis lock (the WATCH/MULTI/EXEC release it calls insufficient)",
		Token:     "INCR of <key>:token at acquire",
		Nodes:     1,
		Expires:   true,
		Reentrant: false,
		Points:    []string{BetweenGetAndMulti},
		Protects: "crashed holders (the key expires) and deleting another client's lock: EXEC aborts if the key " +
			"changed or expired after WATCH, contrary to what the Japanese article says",
		FailureModes: []string{
			"holder paused past the TTL keeps believing it holds: double ownership (K2, K3); its release is refused, it deletes nothing",
			"unsafe if WATCH and MULTI/EXEC go out on different pooled connections (not this client: one connection per transaction)",
		},
		Scenarios: []string{"no-faults-watch-multi", "pause-before-exec-watch-multi", "overrun-watch-multi"},
		New: func(env Env) (Lock, error) {
			return &watchMulti{setNxPx: &setNxPx{rdb: dialRedis(env.Nodes[0], env), env: env}}, nil
		},
	})
}

// watchMulti takes the lock with set-nx-px's own Acquire; only the release differs.
type watchMulti struct {
	*setNxPx
}

func (l *watchMulti) Release(ctx context.Context) error {
	key := l.env.Key
	// Client.Watch sends WATCH and runs fn on one connection reserved for the transaction; it
	// sends UNWATCH on the way out if no EXEC cleared the watch.
	return l.rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, key).Result()
		if err == redis.Nil {
			return ErrNotHeld
		}
		if err != nil {
			return err
		}
		if v != l.value {
			return ErrNotHeld
		}
		l.env.Point(BetweenGetAndMulti)
		var del *redis.IntCmd
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			del = p.Del(ctx, key)
			return nil
		})
		if errors.Is(err, redis.TxFailedErr) {
			return ErrNotHeld // EXEC aborted: the key changed or expired after WATCH
		}
		if err != nil {
			return err
		}
		if del.Val() == 0 {
			return ErrNotHeld
		}
		return nil
	}, key)
}
