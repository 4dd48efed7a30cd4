package locks

// redlock: the Redlock algorithm of the Redis docs ("Distributed Locks with Redis", N = 5
// independent primaries; three of the source articles in docs/CLAIMS.md retell it). The client
// takes the time, sends SET key <random 20 bytes> NX PX ttl to every node in parallel, each bounded
// by a small per-node timeout, and holds the lock only if a majority (N/2+1) said OK and validity =
// ttl − elapsed − drift (drift = ttl×1% + 2 ms, as the reference clients compute it) is still
// positive. Otherwise it runs the compare-and-delete script on ALL nodes. The random retry delay of
// the docs is the worker's backoff (backoff_min..backoff_max), not done here: Acquire is one
// attempt. Extend re-expires the key (Lua, only if the value matches) and counts only with a
// majority reached within the current validity.
//
// It implements Expiring: the workload stops believing it holds once the validity ends. That
// catches a pause before the check (A8, A9), not one after it (K3): a client paused between its
// last validity check and its write writes anyway. Its value is random, not ordered, so it gives
// no fencing token (K6). Every node is reached with lockcheck's go-redis settings (dialRedis).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
)

// RedlockBeforeElapsedCheck is redlock's program point between collecting the nodes' replies and
// reading the clock to compute the validity; a pause here must be caught by the elapsed-time
// check (A8). K10 proper, a pause while the replies still sit unread in the socket buffers, is
// BetweenSendAndReply (see setEverywhere).
const RedlockBeforeElapsedCheck = "before-elapsed-check"

func init() {
	Register(Design{
		Name:    "redlock",
		Summary: "SET NX PX <random> on N independent nodes in parallel; majority within validity = ttl − elapsed − drift; unlock all on failure",
		Promise: Promise{Lease: func(env Env) time.Duration { return env.TTL - redlockDrift(env.TTL) },
			Words: "the TTL less the drift allowance (1% + 2 ms) from each acquisition"},
		Source:  "Redis docs \"Distributed Locks with Redis\" (Redlock, N=5), as three of the source articles retell it",
		Token:   "none",
		Nodes:   5,
		Quorum:  true,
		Expires: true,
		Points:  []string{BetweenSendAndReply, RedlockBeforeElapsedCheck},
		Protects: "crashed holders (keys expire); a minority of nodes down or partitioned; delays during " +
			"acquisition (the elapsed-time check gives the lock up, A8); a holder that checks its validity before acting",
		FailureModes: []string{
			"a pause after the last validity check, before the write, outlives the TTL: double ownership, lost updates (K3)",
			"no fencing token: the random value is not ordered, the resource cannot reject a late writer (K6)",
			"a node that forgets its key (restart without fsync) or whose clock jumps lets a second majority form (K8, K9)",
		},
		Scenarios: []string{"no-faults-redlock", "debate/k3-redlock", "debate/k2-redlock", "debate/k8-redlock", "debate/k9-redlock",
			"debate/a10-aof-always-redlock", "debate/a10-delayed-restart-redlock", "debate/a4-redlock", "debate/a7-redlock",
			"pause-during-acquire-redlock", "random-mixed-redlock", "debate/k10-a8-redlock-send-reply-pause"},
		New: func(env Env) (Lock, error) { return newRedlock(env), nil },
	})
}

// redlockDrift is the clock drift allowance of the reference clients: 1% of the TTL plus 2 ms
// for the expiry resolution of Redis.
func redlockDrift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// redlockNodeTimeout bounds each node's SET: small against the TTL so a dead node does not eat the
// validity (the docs: 5–50 ms for a 10 s TTL): ttl/10 kept within [redlockNodeTimeoutMin, redlockNodeTimeoutMax].
func redlockNodeTimeout(ttl time.Duration) time.Duration {
	return max(redlockNodeTimeoutMin, min(redlockNodeTimeoutMax, ttl/10))
}

// The bounds are the docs' 5 and 50 ms. The design's own tests raise both to a second
// (relaxNodeTimeout) where what they check is the quorum and validity logic, not the timeout: a
// client stalled for 50 ms on a busy machine would otherwise see a healthy node time out.
var redlockNodeTimeoutMin, redlockNodeTimeoutMax = 5 * time.Millisecond, 50 * time.Millisecond

// redlockExtendScript is the extension script: re-expire only if the key still holds our value.
var redlockExtendScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
else
  return 0
end`)

type redlock struct {
	env        Env
	nodes      []*redis.Client
	hooks      []*redisopt.ReplyHook // one per node, for BetweenSendAndReply
	quorum     int
	value      string
	validity   time.Duration // as computed at the last acquisition or extension
	validUntil time.Time
}

func newRedlock(env Env) *redlock {
	l := &redlock{env: env, quorum: len(env.Nodes)/2 + 1}
	for _, addr := range env.Nodes {
		h := &redisopt.ReplyHook{}
		l.hooks = append(l.hooks, h)
		l.nodes = append(l.nodes, dialRedisHooked(addr, env, h))
	}
	return l
}

// redlockReply is one node's answer to one step: yes (OK / deleted / extended), no (the node answered
// and refused: someone else's key, or none), or err (no answer in time: outcome unknown).
type redlockReply struct {
	yes bool
	err error
}

// redlockTally counts a step's replies.
type redlockTally struct{ yes, no, unknown int }

func (t redlockTally) String() string {
	return fmt.Sprintf("%d yes, %d no, %d unknown", t.yes, t.no, t.unknown)
}

// redlockRound is one step running on every node in parallel.
type redlockRound struct {
	wg      sync.WaitGroup
	replies []redlockReply
	done    []chan struct{} // closed when that node's step has returned
	arrived chan int        // each node's index once its reply is in replies
}

// redlockStart runs step on every node in parallel, each bounded by perNode (0: by ctx alone).
func redlockStart(ctx context.Context, nodes []*redis.Client, perNode time.Duration,
	step func(context.Context, *redis.Client) (bool, error)) *redlockRound {
	r := &redlockRound{replies: make([]redlockReply, len(nodes)), done: make([]chan struct{}, len(nodes)),
		arrived: make(chan int, len(nodes))}
	for i, rdb := range nodes {
		r.done[i] = make(chan struct{})
		r.wg.Go(func() {
			defer close(r.done[i])
			c, cancel := ctx, context.CancelFunc(func() {})
			if perNode > 0 {
				c, cancel = context.WithTimeout(ctx, perNode)
			}
			defer cancel()
			r.replies[i].yes, r.replies[i].err = step(c, rdb)
			r.arrived <- i
		})
	}
	return r
}

// waitMajority counts replies as they arrive, until quorum of them said yes (the step succeeded:
// the rest may finish on their own) or every node has answered. The tally counts what arrived.
func (r *redlockRound) waitMajority(quorum int) redlockTally {
	var t redlockTally
	for range len(r.replies) {
		switch rep := r.replies[<-r.arrived]; {
		case rep.err != nil:
			t.unknown++
		case rep.yes:
			t.yes++
		default:
			t.no++
		}
		if t.yes >= quorum {
			return t
		}
	}
	return t
}

// detached is ctx without its cancellation but with its deadline: a step the client no longer
// waits for (a straggling node, once a majority answered) runs to its end rather than being cut
// off mid-command, which would cost the node's connection. Commands on one node's connection
// keep their order, so a later release on that node still runs after the straggler's SET.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, deadline)
	}
	return d, func() {}
}

// wait counts the replies once every node's step has returned; errs joins the unknown ones, named
// by node.
func (r *redlockRound) wait() (t redlockTally, errs error) {
	r.wg.Wait()
	for i, rep := range r.replies {
		switch {
		case rep.err != nil:
			t.unknown++
			errs = errors.Join(errs, fmt.Errorf("node %d: %w", i+1, rep.err))
		case rep.yes:
			t.yes++
		default:
			t.no++
		}
	}
	return t, errs
}

// redlockOnAll runs step on every node in parallel and counts the replies.
func redlockOnAll(ctx context.Context, nodes []*redis.Client, perNode time.Duration,
	step func(context.Context, *redis.Client) (bool, error)) (redlockTally, error) {
	return redlockStart(ctx, nodes, perNode, step).wait()
}

func redlockSetNX(key, value string, ttl time.Duration) func(context.Context, *redis.Client) (bool, error) {
	return func(ctx context.Context, rdb *redis.Client) (bool, error) {
		return rdb.SetNX(ctx, key, value, ttl).Result()
	}
}

func redlockDeleteIfOwner(key, value string) func(context.Context, *redis.Client) (bool, error) {
	return func(ctx context.Context, rdb *redis.Client) (bool, error) {
		n, err := compareAndDelete.Run(ctx, rdb, []string{key}, value).Int()
		return n == 1, err
	}
}

func (l *redlock) Acquire(ctx context.Context) (*int64, error) {
	value := randomValue()
	ttl := l.env.TTL
	start := l.env.Now()
	round := l.setEverywhere(ctx, value)
	// The lock is held once a majority said yes: the docs count "the majority of instances", and
	// waiting for the slowest minority would only add its latency to every acquisition (the
	// reference client redsync waits for every node unless told to fail fast).
	got := round.waitMajority(l.quorum)
	l.env.Point(RedlockBeforeElapsedCheck)
	now := l.env.Now()
	elapsed := now.Sub(start)
	validity := ttl - elapsed - redlockDrift(ttl)
	// The docs ask for elapsed < ttl; the reference clients require validity > 0, which implies it
	// (a hold whose validity is already over would be useless).
	if got.yes >= l.quorum && validity > 0 {
		l.value, l.validity = value, validity
		// The validity is the time left from now, when elapsed was measured: the hold ends at
		// start + ttl − drift, before the earliest key (set no earlier than start) expires.
		l.validUntil = now.Add(validity)
		return nil, nil
	}
	got, errs := round.wait()
	replies := round.replies
	// Not acquired: unlock every node that may hold our value: those that said yes, and those
	// that did not answer (their SET may have landed). The docs say to unlock "all the
	// instances"; a node that answered no did not run our SET NX, so it holds nothing of ours,
	// and unlocking it would only cost a round trip on every refused attempt (under contention,
	// most attempts). Bounded by the per-node timeout too: a dead node must not hold the client
	// back.
	var mayHold []*redis.Client
	for i, r := range replies {
		if r.yes || r.err != nil {
			mayHold = append(mayHold, l.nodes[i])
		}
	}
	if len(mayHold) > 0 {
		_, _ = redlockOnAll(context.WithoutCancel(ctx), mayHold, redlockNodeTimeout(ttl), redlockDeleteIfOwner(l.env.Key, value))
	}
	switch {
	case got.no >= l.quorum:
		return nil, ErrBusy
	case validity <= 0:
		// Whatever the nodes said, the elapsed-time check alone rules the lock out (A8). After a
		// long stall the replies are usually past their per-node timeout too (counted unknown).
		return nil, errors.Join(fmt.Errorf("redlock: %s elapsed, validity %s: gave it up (%v)", elapsed, validity, got), errs)
	default:
		return nil, errors.Join(fmt.Errorf("redlock: no majority (%v)", got), errs)
	}
}

// setEverywhere sends SET NX PX to every node in parallel and returns the round, whose replies
// the caller collects. In between it passes BetweenSendAndReply: once every node has its SET on
// the wire (or has failed to send it), before any reply is read — each connection's reply hook
// holds its read back until then. The SETs are detached from ctx's cancellation (see detached):
// the caller may stop waiting once a majority answered.
func (l *redlock) setEverywhere(ctx context.Context, value string) *redlockRound {
	sent := make([]chan struct{}, len(l.nodes))
	replies := make(chan struct{})
	var allSent time.Time // when the last SET went out; set before replies is closed
	for i, h := range l.hooks {
		sent[i] = make(chan struct{})
		h.Arm("set", func() time.Duration {
			ready := time.Now()
			close(sent[i])
			<-replies
			// Waiting for the other nodes' SETs is the harness's doing, not this node's: it must
			// not eat the per-node timeout. A stop at the point itself (after allSent) does.
			return max(0, allSent.Sub(ready))
		})
	}
	dctx, cancel := detached(ctx)
	round := redlockStart(dctx, l.nodes, redlockNodeTimeout(l.env.TTL), redlockSetNX(l.env.Key, value, l.env.TTL))
	go func() { round.wg.Wait(); cancel() }()
	for i := range l.nodes {
		select {
		case <-sent[i]:
		case <-round.done[i]: // never sent (no connection): nothing to wait for
		}
	}
	allSent = time.Now()
	l.env.Point(BetweenSendAndReply)
	close(replies)
	for _, h := range l.hooks {
		h.Disarm() // each armed SET has been sent or will never be
	}
	return round
}

// ValidUntil is when this client's current hold ends by its own reckoning: the moment the elapsed
// time was measured + validity (= acquisition start + ttl − drift). Zero when it holds nothing.
func (l *redlock) ValidUntil() time.Time { return l.validUntil }

// Validity is the validity computed at the last acquisition or extension: ttl − elapsed − drift.
func (l *redlock) Validity() time.Duration { return l.validity }

// Extend re-expires the key to a full TTL on every node whose key still holds our value. It
// succeeds only if a majority did so and the extension finished within the current validity;
// the new validity is ttl − the extension's elapsed time − drift, from when it finished.
func (l *redlock) Extend(ctx context.Context) error {
	if l.value == "" {
		return ErrNotHeld
	}
	ttl := l.env.TTL
	start := l.env.Now()
	got, errs := redlockOnAll(ctx, l.nodes, redlockNodeTimeout(ttl), func(c context.Context, rdb *redis.Client) (bool, error) {
		n, err := redlockExtendScript.Run(c, rdb, []string{l.env.Key}, l.value, ttl.Milliseconds()).Int()
		return n == 1, err
	})
	now := l.env.Now()
	validity := ttl - now.Sub(start) - redlockDrift(ttl)
	switch {
	case got.yes >= l.quorum && now.Before(l.validUntil) && validity > 0:
		l.validity, l.validUntil = validity, now.Add(validity)
		return nil
	case got.yes >= l.quorum:
		return fmt.Errorf("redlock: extended on a majority (%v) but after the validity ended: %w", got, ErrNotHeld)
	case got.no > len(l.nodes)-l.quorum:
		return fmt.Errorf("redlock: extend: %v: %w", got, ErrNotHeld)
	default:
		return errors.Join(fmt.Errorf("redlock: extend: no majority (%v)", got), errs)
	}
}

// Release deletes our value on every node. nil as soon as a majority had it and deleted it (the
// rest finish on their own, in order on their connections); ErrNotHeld if enough nodes answered
// that it was not ours for a majority to be impossible; else unknown.
func (l *redlock) Release(ctx context.Context) error {
	l.validUntil = time.Time{}
	got, errs := redlockOnAll(ctx, l.nodes, 0, redlockDeleteIfOwner(l.env.Key, l.value))
	switch {
	case got.yes >= l.quorum:
		return nil
	case got.no > len(l.nodes)-l.quorum:
		return ErrNotHeld
	default:
		return errors.Join(fmt.Errorf("redlock: release: %v", got), errs)
	}
}

func (l *redlock) Close() error {
	var errs error
	for _, rdb := range l.nodes {
		errs = errors.Join(errs, rdb.Close())
	}
	return errs
}
