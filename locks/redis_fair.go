package locks

// redis-fair: Redisson's fair lock (RFairLock, class RedissonFairLock) on a single Redis, rebuilt
// in Go from its Lua scripts, with its timeouts repaired (below): the fair lock the Chinese survey
// of lock families asks for (first come, first served), which it says SETNX-style locks are not.
// It is the redisson lock (a reentrant hash with a lease, renewed by the same watchdog) plus two
// keys per lock:
//   - a queue (list "redisson_lock_queue:{key}") of the waiters' ids, in arrival order;
//   - a timeout per waiter (zset "redisson_lock_timeout:{key}"): the wall-clock millisecond,
//     computed with the client's own clock, after which the waiter is dropped from the queue as
//     gone: the lock's remaining lease plus the waiter's wait time, counted from the last time
//     the waiter asked.
//
// The acquire script first drops waiters at the head whose timeout has passed, then grants the
// lock only to the head of the queue (or to anyone when nobody waits), else queues the caller
// (or renews its timeout) and answers the lock's remaining lease. The release script deletes the
// hash at count 0 and PUBLISHes an unlock message on the channel of the waiter now at the head
// only ("redisson_lock__channel:{key}:<its id>"), so a release wakes exactly the next in line.
//
// The workload's attempt is Redisson's tryLock(waitTime, leaseTime): the wait time is what is
// left of the attempt's context; the waiter subscribes to its own channel and asks again on a
// message or when the lease it was told has passed, so a live waiter asks at least once a lease;
// an attempt that runs out of time leaves the queue (Redisson's acquireFailed); so does, here, one
// whose script call failed. As Redisson's current scripts: a waiter already in the queue is told
// the lock's PTTL (at least 0), and a head that has not timed out is never dropped while the lock
// is free (a change tried in 2020 and reverted).
//
// The repair. Redisson gives a newcomer the last waiter's timeout plus its wait time (the
// lease's PTTL plus its wait time if nobody waits), never renews it, and takes the acquirer's wait
// time off every timeout at each acquisition (and the leaver's off those behind it). So the head's
// timeout is always where the first waiter's was: under contention that never lets the queue
// empty, once that moment passes every head is dropped as gone while it still waits, is told
// nothing, and sleeps until the lease it was told has passed while the others overtake it
// (3 clients, 100 ms holds, 1 s waits, no fault: 8 or 9 unfair overtakes per 5 s run, the first
// 1.5 s in). With lock() and no wait time, Redisson's wait time is 5 minutes: the same after 5
// minutes of unbroken contention. Here each ask renews the asker's timeout, and nothing else
// moves it: a waiter is dropped only when it has not asked for a lease plus its wait time.
//
// How it behaves: fair while every waiter lives and keeps asking. A waiter frozen at the head
// (a GC pause) keeps everyone behind it waiting, with the lock free, until its timeout passes
// (its wait time plus the lease that was left when it last asked): fairness costs liveness. One
// frozen further back is dropped when it reaches the head, at once if its timeout has passed.
// Safety is the redisson lock's: no fencing token, and a pause longer than the lease loses the
// lock (K2); its release of an expired lock reports success, as Redisson's does.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Design{
		Name:   "redis-fair",
		Renews: true,
		Queued: true,
		Fair:   true, // only the head of the queue may take a free lock
		Summary: "Redisson RFairLock: the redisson hash lock plus a waiters' queue and a timeout per waiter (Lua); a release wakes only " +
			"the head of the queue",
		Source:    "Redisson RFairLock; the Chinese survey of lock families (a fair lock: first come, first served)",
		Token:     "none",
		Nodes:     1,
		Expires:   true,
		Reentrant: true,
		Points:    []string{BeforeWait},
		Blocking:  "on its own channel, messaged when it is at the head of the queue and the lock is released, or after the lock's remaining lease",
		Protects:  "everything redisson does, and starvation: waiters are served in the order they queued",
		FailureModes: []string{
			"a waiter frozen at the head of the queue blocks everyone behind it, with the lock free, until its timeout passes (up to its wait time " +
				"plus a lease after it last asked)",
			"a waiter that does not ask again for a lease plus its wait time (frozen, cut off) is dropped from the queue and queues again at the back",
			"as redisson: a pause longer than the lease freezes the watchdog too, and the holder is never told (K2); no fencing token",
		},
		Scenarios: []string{"fairness-redis-fair", "paused-head-redis-fair", "dropped-waiters-redis-fair"},
		New:       func(env Env) (Lock, error) { return newFairLock(env), nil },
	})
}

// fairDropTimedOut opens both scripts, as in Redisson: waiters whose place timed out (KEYS[3]
// holds each waiter's deadline, ARGV[4] is now in ms) leave the head of the queue (KEYS[2]).
const fairDropTimedOut = `
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if first == false then break end
  local timeout = redis.call('zscore', KEYS[3], first)
  if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], first)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
`

// fairAcquire is RedissonFairLock's tryLock script with the timeouts renewed (see the file's
// comment). KEYS: lock hash, queue, timeouts; ARGV: lease ms, our id, wait ms, now ms. It
// answers nil when the lock is ours, else how long to wait.
var fairAcquire = redis.NewScript(fairDropTimedOut + `if redis.call('exists', KEYS[1]) == 0 and
   (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
` + fairReentry + fairQueue)

// fairReentry takes one more level of a hold that is ours.
const fairReentry = `if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
`

// fairQueue ends the acquire script when the lock is not ours: it queues the caller at the back,
// or, if it is queued already, renews its timeout (Redisson does not: see the file's comment),
// and answers the lock's remaining lease, the longest the caller sleeps before it asks again.
const fairQueue = `local ttl = math.max(0, redis.call('pttl', KEYS[1]))
if redis.call('zadd', KEYS[3], tonumber(ARGV[4]) + ttl + tonumber(ARGV[3]), ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl`

// fairRelease is RedissonFairLock's unlock script. KEYS: lock hash, queue, timeouts, channel
// prefix; ARGV: unlock message, lease ms, our id, now ms. nil: not ours; 0: a level is left;
// 1: released (or the lock was already gone), and the head of the queue told.
var fairRelease = redis.NewScript(fairDropTimedOut + `if redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head ~= false then redis.call('publish', KEYS[4] .. ':' .. head, ARGV[1]) end
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then redis.call('publish', KEYS[4] .. ':' .. head, ARGV[1]) end
return 1`)

// fairLeave is RedissonFairLock's acquireFailed script: leave the queue. Redisson also takes
// the leaver's wait time (ARGV[2]) off the timeouts of everyone behind it; here a timeout is not
// counted from the waiter ahead, so nothing behind changes. KEYS: queue, timeouts; ARGV: our id,
// our wait ms.
var fairLeave = redis.NewScript(`
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])`)

// fairLock is one client's RFairLock: the redisson hash lock (lease, watchdog, reentrancy
// count) with the queue's keys and its own channel.
type fairLock struct {
	*hashLock
	queue, timeouts string
	channelPrefix   string // the release publishes on channelPrefix + ":" + the head's id
	// The scripts: fairAcquire, fairRelease and fairLeave (test-only copies swap them:
	// locks/mutants.go).
	acquireScript, releaseScript, leaveScript *redis.Script
}

func newFairLock(env Env) *fairLock {
	h := newHashLock(env, false)
	prefix := h.channel
	h.channel = prefix + ":" + h.field // a waiter listens on its own channel only
	return &fairLock{
		hashLock:      h,
		queue:         "redisson_lock_queue:{" + env.Key + "}",
		timeouts:      "redisson_lock_timeout:{" + env.Key + "}",
		channelPrefix: prefix,
		acquireScript: fairAcquire,
		releaseScript: fairRelease,
		leaveScript:   fairLeave,
	}
}

// defaultFairWaitLeases: the wait time of an attempt without a deadline: Redisson's default
// (5 minutes) scaled down as the lease is (30 s to the scenario's TTL): ten leases.
const defaultFairWaitLeases = 10

// Acquire is one tryLock(wait = what is left of ctx).
func (l *fairLock) Acquire(ctx context.Context) (*int64, error) {
	wait := time.Duration(defaultFairWaitLeases) * l.env.TTL
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	waitMS := max(wait.Milliseconds(), 1)
	ttl, err := l.try(ctx, waitMS)
	if err != nil {
		l.leave(waitMS) // best effort: an unknown outcome should not keep a place in line
		return nil, err
	}
	if ttl < 0 {
		return nil, nil
	}
	l.env.Point(BeforeWait)
	sub, err := l.subscribe(ctx)
	if err != nil {
		l.leave(waitMS)
		return nil, fmt.Errorf("%w (and could not wait for its turn: %v)", ErrBusy, err)
	}
	defer sub.close()
	for {
		if ttl, err = l.try(ctx, waitMS); err != nil || ttl < 0 {
			if err != nil {
				l.leave(waitMS) // best effort: an unknown outcome should not keep a place in line
			}
			return nil, err
		}
		pause := max(ttl, time.Millisecond) // 0 (the lock is free, another is at the head): try again soon
		if room, bounded := l.room(ctx); bounded {
			if room <= 0 {
				l.leave(waitMS)
				return nil, ErrBusy
			}
			pause = min(pause, room)
		}
		t := time.NewTimer(pause)
		select {
		case <-sub.unlocked:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			l.leave(waitMS)
			return nil, ErrBusy
		}
		t.Stop()
	}
}

// try runs the acquire script once: ttl < 0 means the lock is ours, otherwise it is how long
// the script says to wait.
func (l *fairLock) try(ctx context.Context, waitMS int64) (time.Duration, error) {
	now := l.env.Now().UnixMilli()
	res, err := l.acquireScript.Run(ctx, l.rdb, []string{l.env.Key, l.queue, l.timeouts}, l.lease, l.field, waitMS, now).Result()
	switch {
	case errors.Is(err, redis.Nil):
		l.acquired()
		return -1, nil
	case err != nil:
		return 0, err
	}
	ms, ok := res.(int64)
	if !ok {
		return 0, fmt.Errorf("redis-fair: acquire script answered %v", res)
	}
	return time.Duration(max(ms, 0)) * time.Millisecond, nil
}

// leave takes us out of the queue after an attempt gave up (Redisson's acquireFailed). It gets
// its own command timeout: the attempt's context is spent. A failure leaves our entry to its
// timeout.
func (l *fairLock) leave(waitMS int64) {
	ctx, cancel := context.WithTimeout(context.Background(), l.env.Timeout)
	defer cancel()
	_ = l.leaveScript.Run(ctx, l.rdb, []string{l.queue, l.timeouts}, l.field, waitMS).Err()
}

// Release gives one level back; at count 0 the head of the queue is told.
func (l *fairLock) Release(ctx context.Context) error {
	defer l.released()
	now := l.env.Now().UnixMilli()
	err := l.releaseScript.Run(ctx, l.rdb, []string{l.env.Key, l.queue, l.timeouts, l.channelPrefix},
		unlockMessage, l.lease, l.field, now).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return ErrNotHeld
	case err != nil:
		return err
	}
	return nil
}
