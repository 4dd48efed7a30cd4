package locks

// set-nx-px: the single-instance lock of the Redis docs' page "Distributed Locks with Redis", as
// the Chinese article on Redis locks' common mistakes and the Japanese article on designing a Redis
// lock also give it (docs/CLAIMS.md). SET key <random value> NX PX ttl takes it; a Lua
// compare-and-delete releases it only if the value is still ours. The fencing token is an INCR of a
// counter key, taken after the SET succeeds, so tokens increase in acquisition order on one node
// (and can go backwards if that node loses its data: K6). It fails as every lease does (A1, K2): a
// holder paused past the TTL still believes it holds.

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
)

func init() {
	Register(Design{
		Name:     "set-nx-px",
		Summary:  "SET key <random> NX PX ttl; Lua compare-and-delete release; INCR fencing token",
		Source:   "Redis docs \"Distributed Locks with Redis\" (single instance), as two of the source articles give it",
		Token:    "INCR of <key>:token at acquire",
		Nodes:    1,
		Expires:  true,
		Points:   []string{BetweenSendAndReply},
		Protects: "crashed holders (the key expires) and deleting another client's lock (owner check)",
		FailureModes: []string{
			"holder paused past the TTL keeps believing it holds: double ownership (K2, K3)",
			"a token from one node's counter goes backwards if the node loses its data (K6)",
		},
		Scenarios: []string{"no-faults-set-nx-px", "debate/k2-set-nx-px", "debate/k3-set-nx-px", "crash-holder-set-nx-px", "debate/k2-random-pauses-set-nx-px", "failover-lost-lock-set-nx-px", "crash-restart-set-nx-px", "debate/k4-set-nx-px", "debate/a4-set-nx-px", "clock-jump-node-set-nx-px", "debate/k10-set-nx-px-send-reply-pause", "debate/k6-failover-token-backwards"},
		New: func(env Env) (Lock, error) {
			hook := &redisopt.ReplyHook{}
			return &setNxPx{rdb: dialRedisHooked(env.Nodes[0], env, hook), hook: hook, env: env}, nil
		},
	})
}

// compareAndDelete is the release script of the Redis docs.
var compareAndDelete = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
else
  return 0
end`)

// BetweenSendAndReply is the program point where the lock's SET has been written to the socket
// and its reply is not read yet (K10): a client stopped there has its reply waiting in the socket
// buffer while the server already runs the TTL down. Redlock passes it once all its SETs are sent.
const BetweenSendAndReply = "between-send-and-reply"

// dialRedisHooked is dialRedis with a reply hook on the connection, for BetweenSendAndReply.
func dialRedisHooked(addr string, env Env, hook *redisopt.ReplyHook) *redis.Client {
	return newRedisClient(redisopt.WithReplyHook(redisopt.Options(addr, env.Timeout), hook), env)
}

type setNxPx struct {
	rdb   *redis.Client
	hook  *redisopt.ReplyHook
	env   Env
	value string
}

func (l *setNxPx) Acquire(ctx context.Context) (*int64, error) {
	value := randomValue()
	l.hook.Arm("set", func() time.Duration {
		l.env.Point(BetweenSendAndReply)
		return 0 // a stop here is the client's own stall: it counts against the command's timeout
	})
	ok, err := l.rdb.SetNX(ctx, l.env.Key, value, l.env.TTL).Result()
	l.hook.Disarm()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrBusy
	}
	l.value = value
	token, err := l.rdb.Incr(ctx, l.env.Key+":token").Result()
	if err != nil {
		// We hold the lock but have no token: give it back rather than work unfenced.
		_ = l.Release(ctx)
		return nil, errors.Join(errors.New("took the lock but could not get a fencing token"), err)
	}
	return &token, nil
}

func (l *setNxPx) Release(ctx context.Context) error {
	return deleteIfOwner(ctx, l.rdb, l.env.Key, l.value)
}

// deleteIfOwner runs compareAndDelete: nil if the key held value and is gone, ErrNotHeld if it
// held something else or nothing.
func deleteIfOwner(ctx context.Context, rdb *redis.Client, key, value string) error {
	n, err := compareAndDelete.Run(ctx, rdb, []string{key}, value).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (l *setNxPx) Close() error { return l.rdb.Close() }
