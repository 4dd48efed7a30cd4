package locks

// set-nx-px: the single-instance lock of the Redis docs' page "Distributed Locks with Redis", as
// the Chinese article on Redis locks' common mistakes and the Japanese article on designing a Redis
// lock also give it (docs/CLAIMS.md). SET key <random value> NX PX ttl takes it; a Lua
// compare-and-delete releases it only if the value is still ours. The fencing token is an INCR of a
// counter key, taken in the same script as the SET and only if the SET succeeded: one round trip,
// as a lock without a token needs, and the same token — tokens increase in acquisition order on
// one node (and can go backwards if that node loses its data: K6). A reply lost after the script
// ran leaves the lock taken and the token spent, exactly as a lost reply to the SET did when the
// INCR was a command of its own. It fails as every lease does (A1, K2): a holder paused past the
// TTL still believes it holds.

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
		Summary:  "SET key <random> NX PX ttl and INCR fencing token in one script; Lua compare-and-delete release",
		Source:   "Redis docs \"Distributed Locks with Redis\" (single instance), as two of the source articles give it",
		Token:    "INCR of <key>:token in the acquiring script",
		Nodes:    1,
		Expires:  true,
		Points:   []string{BetweenSendAndReply},
		Protects: "crashed holders (the key expires) and deleting another client's lock (owner check)",
		FailureModes: []string{
			"holder paused past the TTL keeps believing it holds: double ownership (K2, K3)",
			"a token from one node's counter goes backwards if the node loses its data (K6)",
		},
		Scenarios: []string{"no-faults-set-nx-px", "fairness-set-nx-px", "debate/k2-set-nx-px", "debate/k3-set-nx-px", "crash-holder-set-nx-px",
			"debate/k2-random-pauses-set-nx-px", "failover-lost-lock-set-nx-px", "crash-restart-set-nx-px", "debate/k4-set-nx-px",
			"debate/a4-set-nx-px", "clock-jump-node-set-nx-px", "debate/k10-set-nx-px-send-reply-pause", "debate/k6-failover-token-backwards"},
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
	rdb    *redis.Client
	hook   *redisopt.ReplyHook
	env    Env
	value  string
	loaded bool // the acquire script was sent to the server once (SCRIPT LOAD)
}

// acquireWithToken is SET key value NX PX ttl and, only if that took the key, INCR of the token
// counter, in one atomic step; it returns the token, or nil when the key was taken.
// acquireWithTokenNoTTL is the same without an expiry (a TTL of 0).
var (
	acquireWithToken = redis.NewScript(`if redis.call('set',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then ` +
		`return redis.call('incr',KEYS[2]) end return false`)
	acquireWithTokenNoTTL = redis.NewScript(`if redis.call('set',KEYS[1],ARGV[1],'NX') then return redis.call('incr',KEYS[2]) end return false`)
)

func (l *setNxPx) Acquire(ctx context.Context) (*int64, error) {
	value := randomValue()
	script, args := acquireWithToken, []any{value, max(1, l.env.TTL.Milliseconds())}
	if l.env.TTL <= 0 {
		script, args = acquireWithTokenNoTTL, []any{value}
	}
	keys := []string{l.env.Key, l.env.Key + ":token"}
	if !l.loaded {
		// Loaded before the first attempt, so that the attempt is one EVALSHA: a NOSCRIPT reply
		// would mean sending the lock's command twice (and passing BetweenSendAndReply twice).
		_ = script.Load(ctx, l.rdb).Err() // if it fails, so will the attempt, and say why
		l.loaded = true
	}
	token, err := l.send(ctx, "evalsha", func() *redis.Cmd { return script.EvalSha(ctx, l.rdb, keys, args...) })
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// The server lost its scripts (a restart, a promoted replica): this attempt's command
		// never ran. Send it whole; that is a second send, and a second pass of the point.
		token, err = l.send(ctx, "eval", func() *redis.Cmd { return script.Eval(ctx, l.rdb, keys, args...) })
	}
	switch {
	case errors.Is(err, redis.Nil):
		return nil, ErrBusy
	case err != nil:
		return nil, err
	}
	l.value = value
	return &token, nil
}

// send runs the lock's command, passing BetweenSendAndReply once it is on the wire, before its
// reply is read.
func (l *setNxPx) send(ctx context.Context, command string, run func() *redis.Cmd) (int64, error) {
	l.hook.Arm(command, func() time.Duration {
		l.env.Point(BetweenSendAndReply)
		return 0 // a stop here is the client's own stall: it counts against the command's timeout
	})
	defer l.hook.Disarm()
	return run().Int64()
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
