package locks

// redisson-fenced: Redisson's RFencedLock: the redisson hash lock of redisson.go, watchdog and
// unlock pub/sub included, whose acquire script also INCRs a token key (redisson_lock_token:{key})
// in the same script and hands the result out as the fencing token. As in RFencedLock the INCR runs
// on every successful acquisition, re-entries included; the workload fences its critical section
// with the outer level's token, which is lower, and no access ever carries the inner one, so the
// extra increments cost nothing.
//
// It fails exactly as redisson does (a pause longer than what is left of the lease freezes the
// watchdog, the key expires, the paused holder resumes and writes: K2, A1), but the token lets the
// resource reject that late access (K5). The counter lives on the one node: if the node loses
// its data the token goes backwards (K6).

func init() {
	Register(Design{
		Name:      "redisson-fenced",
		Renews:    true,
		Summary:   "Redisson RFencedLock: the redisson hash lock and watchdog plus an INCR fencing token in the acquire script",
		Source:    "Redisson RFencedLock; Chinese article on Redis locks and Redisson for the lock itself",
		Token:     "INCR of redisson_lock_token:{<key>} in the acquire script, at every acquisition (re-entries too)",
		Nodes:     1,
		Expires:   true,
		Reentrant: true,
		Points:    []string{BeforeWait},
		Blocking:  "as redisson: on the lock's unlock channel, or until the holder's remaining lease has passed",
		Protects:  "what redisson protects, and late accesses by a holder that lost the lock, at a resource that checks tokens (K5)",
		FailureModes: []string{
			"a pause longer than what is left of the lease freezes the watchdog: double ownership (K2, A1); only a token-checking resource stays correct",
			"the watchdog stops silently when it finds the field gone: the holder is never told",
			"the token counter is on one node: it goes backwards if the node loses its data (K6)",
		},
		Scenarios: []string{"no-faults-redisson-fenced", "debate/k3-redisson-fenced"},
		New:       func(env Env) (Lock, error) { return newHashLock(env, true), nil },
	})
}
