package locks

// redisson-try: the redisson lock taken with Redisson's tryLock() without a wait time: one run
// of the acquire script, and if someone else holds the lock the answer is "no" at once. The
// caller does the waiting (here the worker, which tries again after its backoff), where the
// redisson design's tryLock(waitTime) blocks on the lock's unlock channel. Everything else (the
// hash, the lease, the watchdog, the release) is redisson's. It exists to set a blocking lock
// and a try-lock of the same kind side by side (the Chinese survey of lock families names the
// difference): a waiter that polls learns of a release only at its next try.

import "context"

func init() {
	Register(Design{
		Name:      "redisson-try",
		Renews:    true,
		Summary:   "Redisson RLock taken with tryLock() (no wait time): one acquire script, busy at once; the caller retries",
		Source:    "Redisson RLock.tryLock(); the Chinese survey of lock families (a blocking lock versus a try-lock)",
		Token:     "none",
		Nodes:     1,
		Expires:   true,
		Reentrant: true,
		Protects:  "as redisson",
		FailureModes: []string{
			"as redisson: a pause longer than the lease freezes the watchdog too (K2, K3, A1); no fencing token",
			"a waiter learns of a release only at its next try: each hand-over waits up to one backoff",
		},
		Scenarios: []string{"fairness-redisson-try"},
		New:       func(env Env) (Lock, error) { return tryOnly{newHashLock(env, false)}, nil },
	})
}

// tryOnly is the redisson lock whose Acquire never waits.
type tryOnly struct{ *hashLock }

func (l tryOnly) Acquire(ctx context.Context) (*int64, error) {
	pttl, token, err := l.try(ctx)
	if err != nil || pttl < 0 {
		return token, err
	}
	return nil, ErrBusy
}
