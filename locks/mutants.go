//go:build mutants

package locks

// Mutants: shipped designs, each with one realistic bug, to measure what the matrix catches (make
// mutants, tools/lockmutants). They exist only in binaries built with the "mutants" build
// tag, so no user ever sees them listed as designs. Each wraps the original's client and replaces the one
// method the bug lives in; everything else is the original's code.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
)

// registerMutant registers a copy of the original's registry entry under name, with the bug
// stated where a user would look (summary, failure modes) and no scenarios of its own.
func registerMutant(name, original, bug string, build func(Env) (Lock, error)) {
	d, err := Get(original)
	if err != nil {
		panic(err)
	}
	d.Name = name
	d.Summary = "MUTANT of " + original + ": " + bug
	d.FailureModes = []string{bug}
	d.Scenarios = nil
	d.New = build
	Register(d)
	mutants = append(mutants, Mutant{Design: d, Original: original, Bug: bug})
}

func registerMutants() {
	registerMutant("mutant-redlock-no-elapsed", "redlock",
		"the validity is ttl − drift: the time spent acquiring is not subtracted",
		func(env Env) (Lock, error) { return redlockNoElapsed{newRedlock(env)}, nil })
	registerMutant("mutant-redlock-minority", "redlock",
		"the majority is off by one: N/2 nodes (2 of 5) are taken for a quorum",
		func(env Env) (Lock, error) {
			l := newRedlock(env)
			l.quorum = len(env.Nodes) / 2
			return l, nil
		})
	registerMutant("mutant-redisson-inner-release", "redisson",
		"an inner release of a reentrant hold deletes the whole lock instead of counting one level down",
		func(env Env) (Lock, error) { return redissonReleaseAll{newHashLock(env, false)}, nil })
	registerMutant("mutant-redisson-no-watchdog", "redisson",
		"the watchdog never renews the lease: a hold longer than the lease loses the lock without a word",
		func(env Env) (Lock, error) { return redissonNoWatchdog{newHashLock(env, false)}, nil })
	registerMutant("mutant-zk-no-relist", "zk-session-aware",
		"a waiter whose predecessor's node goes away takes itself for the holder without listing the children again",
		func(env Env) (Lock, error) { return zkNoRelist{newZKRecipe(env, zkMutexKind)}, nil })
	registerMutant("mutant-zk-ignores-session", "zk-session-aware",
		"the holder never follows its session: losing it (expiry, a cut) goes unnoticed",
		func(env Env) (Lock, error) { return zkIgnoresSession{newZKRecipe(env, zkMutexKind)}, nil })
	registerMutant("mutant-set-nx-px-early-token", "set-nx-px",
		"the fencing token is taken (INCR) before the lock is held and kept across busy attempts",
		func(env Env) (Lock, error) { return &setNxPxEarlyToken{setNxPx: newSetNxPx(env)}, nil })
	registerMutant("mutant-set-nx-px-random-token", "set-nx-px",
		"the fencing token comes from a non-monotonic source (a random number, not the INCR)",
		func(env Env) (Lock, error) { return setNxPxRandomToken{newSetNxPx(env)}, nil })
	registerMutant("mutant-set-nx-px-del", "set-nx-px",
		"the release is a plain DEL: it does not check that the value is still ours",
		func(env Env) (Lock, error) { return setNxPxDel{newSetNxPx(env)}, nil })
	registerMutant("mutant-redis-fair-any-waiter", "redis-fair",
		"the queue is kept but not obeyed: a release wakes every waiter, and whichever asks first takes the free lock, not only the head",
		func(env Env) (Lock, error) {
			l := newFairLock(env)
			l.acquireScript, l.releaseScript = fairAcquireAnyWaiter, fairReleaseWakeAll
			return l, nil
		})
	registerMutant("mutant-redis-fair-redisson-timeouts", "redis-fair",
		"the waiters' timeouts are Redisson's: a newcomer's is the last waiter's plus its wait time, never renewed, and each acquisition "+
			"takes the acquirer's wait time off all of them, so under contention that never empties the queue live heads are dropped and "+
			"overtaken",
		func(env Env) (Lock, error) {
			l := newFairLock(env)
			l.acquireScript, l.leaveScript = fairAcquireRedisson, fairLeaveRedisson
			return l, nil
		})
	registerMutant("mutant-getset-short-expiry", "getset",
		"the expiry time written is a tenth of the lease the client works with (a unit slip): others take over every hold that lasts longer",
		func(env Env) (Lock, error) {
			env.TTL /= 10
			d, _ := Get("getset")
			return d.New(env)
		})
	registerMutant("mutant-mysql-get-lock-unchecked", "mysql-get-lock",
		"GET_LOCK's answer is not checked: 0 (timed out, someone else holds it) is taken as held",
		func(env Env) (Lock, error) {
			s, err := newMySQLSession(env)
			if err != nil {
				return nil, err
			}
			return mysqlGetLockUnchecked{&mysqlGetLock{s: s, env: env}}, nil
		})
}

func newSetNxPx(env Env) *setNxPx {
	d, _ := Get("set-nx-px")
	l, _ := d.New(env)
	return l.(*setNxPx)
}

// fairAcquireAnyWaiter is redis-fair's acquire script, except that a free lock goes to whichever
// waiter asks, head of the queue or not (it leaves the queue as it takes the lock).
var fairAcquireAnyWaiter = redis.NewScript(fairDropTimedOut + `if redis.call('exists', KEYS[1]) == 0 then
  redis.call('lrem', KEYS[2], 0, ARGV[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
` + fairReentry + fairQueue)

// fairAcquireRedisson is RedissonFairLock's tryLock script as Redisson has it (redis-fair before
// its timeouts were repaired).
var fairAcquireRedisson = redis.NewScript(fairDropTimedOut + `if redis.call('exists', KEYS[1]) == 0 and
   (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  local waiting = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #waiting do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiting[i])
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
` + fairReentry + `if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl`)

// fairLeaveRedisson is RedissonFairLock's acquireFailed script: leave the queue, and take our
// wait time off the timeouts of everyone behind us.
var fairLeaveRedisson = redis.NewScript(`
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1 end
i = i + 1
while i <= #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
  i = i + 1
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])`)

// fairReleaseWakeAll is redis-fair's release script, except that it tells every waiter, not only
// the head.
var fairReleaseWakeAll = redis.NewScript(fairDropTimedOut + `local function wake()
  local waiting = redis.call('lrange', KEYS[2], 0, -1)
  for i = 1, #waiting do redis.call('publish', KEYS[4] .. ':' .. waiting[i], ARGV[1]) end
end
if redis.call('exists', KEYS[1]) == 0 then
  wake()
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
wake()
return 1`)

// redlockNoElapsed: Redlock's Acquire with validity = ttl − drift.
type redlockNoElapsed struct{ *redlock }

func (l redlockNoElapsed) Acquire(ctx context.Context) (*int64, error) {
	value := randomValue()
	ttl := l.env.TTL
	round := l.setEverywhere(ctx, value)
	got := round.waitMajority(l.quorum)
	l.env.Point(RedlockBeforeElapsedCheck)
	now := l.env.Now()
	validity := ttl - redlockDrift(ttl) // the bug: the elapsed time is not subtracted
	if got.yes >= l.quorum && validity > 0 {
		l.value, l.validity = value, validity
		l.validUntil = now.Add(validity)
		return nil, nil
	}
	got, errs := round.wait()
	var mayHold []*redis.Client
	for i, r := range round.replies {
		if r.yes || r.err != nil {
			mayHold = append(mayHold, l.nodes[i])
		}
	}
	if len(mayHold) > 0 {
		_, _ = redlockOnAll(context.WithoutCancel(ctx), mayHold, redlockNodeTimeout(ttl), redlockDeleteIfOwner(l.env.Key, value))
	}
	if got.no >= l.quorum {
		return nil, ErrBusy
	}
	return nil, errors.Join(fmt.Errorf("redlock: no majority (%v)", got), errs)
}

// hashReleaseAll is Redisson's unlock script without the level count.
var hashReleaseAll = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)

type redissonReleaseAll struct{ *hashLock }

func (l redissonReleaseAll) Release(ctx context.Context) error {
	defer l.released()
	err := hashReleaseAll.Run(ctx, l.rdb, []string{l.env.Key, l.channel}, unlockMessage, l.lease, l.field).Err()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	return err
}

// redissonNoWatchdog: the hash lock, its watchdog stopped as soon as a hold starts it (kept in
// place, stopped, so that a reentrant acquire does not start another).
type redissonNoWatchdog struct{ *hashLock }

func (l redissonNoWatchdog) Acquire(ctx context.Context) (*int64, error) {
	token, err := l.hashLock.Acquire(ctx)
	l.mu.Lock()
	if l.dog != nil {
		l.dog.stop()
	}
	l.mu.Unlock()
	return token, err
}

// zkNoRelist: the recipe's Acquire, except that a deleted predecessor means "ours".
type zkNoRelist struct{ *zkRecipe }

func (r zkNoRelist) Acquire(ctx context.Context) (*int64, error) {
	conn, err := r.s.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.flushPending(ctx, conn); err != nil {
		return nil, err
	}
	if err := r.s.ensurePath(ctx, conn, r.path); err != nil {
		return nil, err
	}
	node, err := r.create(ctx, conn)
	if err != nil {
		return nil, err
	}
	base := node[strings.LastIndexByte(node, '/')+1:]
	for {
		children, err := zkCall(ctx, r.env.Timeout, func() ([]string, error) {
			ch, _, err := conn.Children(r.path)
			return ch, err
		}, nil)
		if err != nil {
			return nil, r.giveUp(ctx, conn, node, err)
		}
		sorted := zkSortBySeq(children)
		i := indexOf(sorted, base)
		if i < 0 {
			return nil, fmt.Errorf("zookeeper: our lock node %s is gone (session expired?)", node)
		}
		blocker := r.kind.zkBlocker(sorted, i)
		if blocker == "" {
			return r.took(ctx, conn, node)
		}
		ch, err := zkCall(ctx, r.env.Timeout, func() (<-chan zk.Event, error) {
			_, _, ch, err := conn.GetW(r.path + "/" + blocker)
			return ch, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, r.giveUp(ctx, conn, node, err)
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNotWatching {
				return nil, r.giveUp(ctx, conn, node, fmt.Errorf("zookeeper: watch on %s ended: %v", blocker, ev.Err))
			}
			return r.took(ctx, conn, node) // the bug: the predecessor went, so we must be first
		case <-ctx.Done():
			return nil, r.giveUp(ctx, conn, node, nil)
		}
	}
}

// zkIgnoresSession: the recipe with no validity: the holder always believes it holds.
type zkIgnoresSession struct{ *zkRecipe }

func (zkIgnoresSession) ValidUntil() time.Time { return time.Time{} }

// setNxPxEarlyToken takes its token before trying the lock and keeps it until an attempt succeeds.
type setNxPxEarlyToken struct {
	*setNxPx
	token *int64
}

func (l *setNxPxEarlyToken) Acquire(ctx context.Context) (*int64, error) {
	if l.token == nil {
		t, err := l.rdb.Incr(ctx, l.env.Key+":token").Result()
		if err != nil {
			return nil, err
		}
		l.token = &t
	}
	value := randomValue()
	ok, err := l.rdb.SetNX(ctx, l.env.Key, value, l.env.TTL).Result()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrBusy // keeps l.token for the next attempt
	}
	l.value = value
	token := l.token
	l.token = nil
	return token, nil
}

type setNxPxRandomToken struct{ *setNxPx }

func (l setNxPxRandomToken) Acquire(ctx context.Context) (*int64, error) {
	if _, err := l.setNxPx.Acquire(ctx); err != nil {
		return nil, err
	}
	t := rand.Int64N(1 << 40)
	return &t, nil
}

type setNxPxDel struct{ *setNxPx }

func (l setNxPxDel) Release(ctx context.Context) error {
	n, err := l.rdb.Del(ctx, l.env.Key).Result()
	if err == nil && n == 0 {
		return ErrNotHeld
	}
	return err
}

type mysqlGetLockUnchecked struct{ *mysqlGetLock }

func (l mysqlGetLockUnchecked) Acquire(ctx context.Context) (*int64, error) {
	conn, err := l.s.session(ctx)
	if err != nil {
		return nil, err
	}
	if !l.ready {
		if _, err := conn.ExecContext(ctx, getLockSequence); err != nil {
			l.s.drop()
			return nil, err
		}
		l.ready = true
	}
	l.env.Point(BeforeLockStatement)
	var got, token sql.NullInt64
	err = conn.QueryRowContext(ctx, fmt.Sprintf("SELECT GET_LOCK(?, %.3f), "+
		"NEXTVAL(lock_fence)", waitWithin(ctx).Seconds()), l.env.Key).Scan(&got, &token)
	switch {
	case err != nil:
		l.s.drop()
		return nil, err
	case !got.Valid:
		l.s.drop()
		return nil, errors.New("GET_LOCK returned NULL")
	}
	return &token.Int64, nil // the bug: got.Int64 == 0 (timed out) is not looked at
}
