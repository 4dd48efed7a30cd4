package locks

// redisson: the Redisson (Java) reentrant lock on a single Redis, rebuilt in Go from Redisson's
// behaviour as its sources and the Chinese article on Redis locks and Redisson describe it. The
// lock is a hash: field "<client uuid>:<thread id>" (one uuid per lock instance, a fixed thread
// id), value = reentrancy count. The acquire script takes the lock when the key is missing or the
// field is already ours (HINCRBY field 1, PEXPIRE key lease) and otherwise answers the key's PTTL;
// the release script refuses a non-owner, counts down, and at 0 deletes the key and PUBLISHes an
// unlock message on the lock's channel. A waiter subscribes to that channel and tries again on the
// unlock message or after the PTTL, whichever comes first.
//
// Lease and watchdog: Redisson's default lease is 30 s (renewed every 10 s); a 5 s test cannot wait
// for that, so the lease is the scenario's TTL and the watchdog renews every TTL/3 while the lock is
// held, with `if HEXISTS key field then PEXPIRE key lease`. As in Redisson, a renewal that finds the
// field gone stops renewing silently: the holder is never told (no Expiring here), and a command
// error is skipped until the next period. The watchdog stops when the last level is released
// (whatever the release's outcome) and on Close.
//
// How it fails: the watchdog lives in the client's process, so a pause (GC, SIGSTOP) freezes it with
// everything else. A pause shorter than the lease minus the time since the last renewal is harmless;
// a longer one lets the key expire, another client takes the lock, and the paused holder resumes,
// finds its field gone, stops renewing without a word and finishes its critical section anyway
// (K2, K3, A1). There is no fencing token (redisson-fenced adds Redisson's RFencedLock INCR).
//
// Every Redis client here, the pub/sub connection included, is built with dialRedis (redisopt: no
// retries, commands bounded by their context).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
)

func init() {
	Register(Design{
		Name:      "redisson",
		Renews:    true,
		Summary:   "Redisson RLock: reentrant hash lock, Lua acquire/release, unlock pub/sub, watchdog renewing every lease/3",
		Source:    "Redisson RLock; Chinese article on Redis locks and Redisson (reentrant lock, watchdog)",
		Token:     "none",
		Nodes:     1,
		Expires:   true,
		Reentrant: true,
		Points:    []string{BeforeWait},
		Blocking:  "on the lock's unlock channel (pub/sub), or until the holder's remaining lease has passed",
		Protects: "crashed holders (the lease expires), holds longer than the lease (the watchdog renews), releasing another client's lock " +
			"(owner field), re-entry by the holder",
		FailureModes: []string{
			"a pause longer than what is left of the lease freezes the watchdog too: the key expires, another client takes the lock, the paused " +
				"holder resumes and writes (K2, K3, A1)",
			"the watchdog finds the field gone and stops renewing silently: the holder is never told it lost the lock",
			"no fencing token: the resource cannot reject the late writer",
			"a release lost with its connection leaves a level of the reentrant count behind, and the watchdog stops; a holder that takes " +
				"the lock again within the lease re-enters that level and keeps the lock for ever, one level up: every other client starves",
		},
		Scenarios: []string{
			"no-faults-redisson",
			"fairness-redisson",
			"paused-waiter-redisson",
			"short-pause-redisson",
			"starved-lost-release-redisson",
			"debate/k2-redisson",
			"debate/k3-redisson",
		},
		New: func(env Env) (Lock, error) { return newHashLock(env, false), nil },
	})
}

// hashAcquire is Redisson's lock script; with ARGV[3] = "1" it also INCRs a token key, as
// RFencedLock does (every successful acquisition, re-entries included). It answers {-1, token}
// when the lock is ours and {pttl, -1} when someone else holds it.
var hashAcquire = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local token = -1
  if ARGV[3] == '1' then token = redis.call('incr', KEYS[2]) end
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}`)

// hashRelease is Redisson's unlock script: nil when the field is not ours, 0 when a level is left
// (lease renewed), 1 when the key was deleted and the unlock message published.
var hashRelease = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)

// hashRenew is the watchdog's script: 1 renewed, 0 the field is gone.
var hashRenew = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0`)

// BeforeWait is the program point where an acquire found the lock held and is about to wait for
// its turn (redis-fair: it has just joined the queue, or kept its place in it).
const BeforeWait = "before-wait"

// unlockMessage is what Redisson publishes on release (LockPubSub.UNLOCK_MESSAGE).
const unlockMessage = "0"

// hashLock is one client's Redisson lock; fenced adds the RFencedLock token.
type hashLock struct {
	rdb      *redis.Client
	env      Env
	fenced   bool
	field    string // "<uuid>:<thread id>"
	channel  string // where releases are announced
	tokenKey string
	lease    string // env.TTL in milliseconds, as the scripts want it

	mu     sync.Mutex
	levels int       // acquisitions not yet released, as Redisson's renewal entry counts them
	dog    *watchdog // nil while nothing is renewed
	asked  int64     // when the acquire script that took the lock last was sent (Promised)
}

// Promised says when the request that took the lock was sent: a blocking acquire tries several
// times within one attempt.
func (l *hashLock) Promised() (int64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.asked, ""
}

func newHashLock(env Env, fenced bool) *hashLock {
	return &hashLock{
		rdb:      dialRedis(env.Nodes[0], env),
		env:      env,
		fenced:   fenced,
		field:    randomValue()[:32] + ":1",
		channel:  "redisson_lock__channel:{" + env.Key + "}",
		tokenKey: "redisson_lock_token:{" + env.Key + "}",
		lease:    strconv.FormatInt(env.TTL.Milliseconds(), 10),
	}
}

// Acquire makes one tryLock(wait = ctx): try; if busy, subscribe to the unlock channel and try
// again on each unlock message or when the answered PTTL has passed. It starts a script only while
// a full command timeout is left, so running out of time ends in ErrBusy (the last answer was
// "held by another"), not in an unknown outcome.
func (l *hashLock) Acquire(ctx context.Context) (*int64, error) {
	pttl, token, err := l.try(ctx)
	if err != nil || pttl < 0 {
		return token, err
	}
	l.env.Point(BeforeWait)
	sub, err := l.subscribe(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (and could not wait for its release: %v)", ErrBusy, err)
	}
	defer sub.close()
	for {
		// Subscribed: try again first, so a release between the last try and the subscription
		// is not missed.
		if pttl, token, err = l.try(ctx); err != nil || pttl < 0 {
			return token, err
		}
		wait := max(pttl, time.Millisecond)
		if room, bounded := l.room(ctx); bounded {
			if room <= 0 {
				return nil, ErrBusy
			}
			wait = min(wait, room)
		}
		t := time.NewTimer(wait)
		select {
		case <-sub.unlocked:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ErrBusy
		}
		t.Stop()
	}
}

// room is how long Acquire may still wait and keep a full command timeout for one more try.
func (l *hashLock) room(ctx context.Context) (time.Duration, bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(deadline) - l.env.Timeout, true
}

// try runs the acquire script once: pttl < 0 means the lock is ours (token set when fenced),
// otherwise pttl is how long the current holder's lease has left.
func (l *hashLock) try(ctx context.Context) (time.Duration, *int64, error) {
	fenced := "0"
	if l.fenced {
		fenced = "1"
	}
	asked := history.Now()
	res, err := hashAcquire.Run(ctx, l.rdb, []string{l.env.Key, l.tokenKey}, l.lease, l.field, fenced).Int64Slice()
	if err != nil {
		return 0, nil, err
	}
	if len(res) != 2 {
		return 0, nil, fmt.Errorf("redisson: acquire script answered %v", res)
	}
	if res[0] != -1 {
		return time.Duration(res[0]) * time.Millisecond, nil, nil
	}
	l.mu.Lock()
	l.asked = asked
	l.mu.Unlock()
	l.acquired()
	if !l.fenced {
		return -1, nil, nil
	}
	token := res[1]
	return -1, &token, nil
}

// Release gives one level back. As in Redisson, the renewal entry loses the level whatever the
// outcome, and the watchdog stops with the last one.
func (l *hashLock) Release(ctx context.Context) error {
	defer l.released()
	err := hashRelease.Run(ctx, l.rdb, []string{l.env.Key, l.channel}, unlockMessage, l.lease, l.field).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return ErrNotHeld
	case err != nil:
		return err
	}
	return nil
}

func (l *hashLock) Close() error {
	l.mu.Lock()
	dog := l.dog
	l.dog, l.levels = nil, 0
	l.mu.Unlock()
	if dog != nil {
		dog.stop()
		<-dog.done
	}
	return l.rdb.Close()
}

func (l *hashLock) acquired() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.levels++
	if l.dog == nil {
		l.dog = l.startWatchdog()
	}
}

func (l *hashLock) released() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.levels > 0 {
		l.levels--
	}
	if l.levels == 0 && l.dog != nil {
		l.dog.stop()
		l.dog = nil
	}
}

// watchdog renews the lease every lease/3 (timed from the end of the previous renewal, as
// Redisson schedules it) until stopped or until it finds the field gone.
type watchdog struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

func (w *watchdog) stop() { w.once.Do(func() { close(w.quit) }) }

func (l *hashLock) startWatchdog() *watchdog {
	w := &watchdog{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		every := l.env.TTL / 3
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), l.env.Timeout)
			asked := history.Now()
			n, err := hashRenew.Run(ctx, l.rdb, []string{l.env.Key}, l.lease, l.field).Int()
			cancel()
			r := Renewal{Asked: asked, Answered: history.Now(), OK: err == nil && n == 1, Unknown: err != nil}
			if err != nil {
				r.Error = err.Error()
			} else if n == 0 {
				r.Error = "the field is gone"
			}
			l.env.Renewed(r)
			if err == nil && n == 0 {
				// The field is gone: stop renewing, tell nobody (Redisson's behaviour).
				l.mu.Lock()
				if l.dog == w {
					l.dog, l.levels = nil, 0
				}
				l.mu.Unlock()
				return
			}
			// Renewed, or an error: Redisson logs it and tries again next period.
			t.Reset(every)
		}
	}()
	return w
}

// unlockSub is one waiter's subscription to the lock's channel; unlocked gets a permit per
// unlock message (Redisson's latch).
type unlockSub struct {
	ps       *redis.PubSub
	unlocked chan struct{}
	done     chan struct{}
}

// subscribe opens a subscription on its own connection and waits for the server to confirm it,
// bounded by ctx less one command timeout.
func (l *hashLock) subscribe(ctx context.Context) (*unlockSub, error) {
	wctx := ctx
	if room, bounded := l.room(ctx); bounded {
		if room <= 0 {
			return nil, context.DeadlineExceeded
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, room)
		defer cancel()
	}
	s := &unlockSub{
		ps:       l.rdb.Subscribe(wctx, l.channel),
		unlocked: make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	confirmed := make(chan struct{})
	go func() {
		defer close(s.done)
		for {
			// No deadline: the read ends with a message or when close() closes the connection.
			msg, err := s.ps.Receive(context.Background())
			if err != nil {
				return
			}
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					close(confirmed)
				}
			case *redis.Message:
				if m.Payload == unlockMessage {
					select {
					case s.unlocked <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	select {
	case <-confirmed:
		return s, nil
	case <-s.done:
		s.close()
		return nil, errors.New("redisson: subscription failed")
	case <-wctx.Done():
		s.close()
		return nil, fmt.Errorf("redisson: subscription not confirmed: %w", wctx.Err())
	}
}

func (s *unlockSub) close() {
	_ = s.ps.Close()
	<-s.done
}
