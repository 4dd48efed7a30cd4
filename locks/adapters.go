package locks

// adapters.go: lock libraries of other languages, run as they are through the lock-client
// protocol (external.go) by the adapters in adapters/ (one short program each, built into
// lockcheck). Registered like every design, so scenarios, `lockcheck list` and the matrix name
// them; each client's New starts its own adapter program.

import (
	"github.com/lockcheck/lockcheck/adapters"
)

func init() {
	Register(Design{
		Name: "redis-py",
		Summary: "redis-py 4.3 redis.lock.Lock as it is (adapters/redis_py_lock.py): SET NX PX of a uuid, its own Lua compare-and-delete " +
			"release; a careful user asks owned() before writing",
		Source:  "redis-py 4.3 (Debian's python3-redis) redis.lock.Lock, run through the lock-client protocol",
		Token:   "none",
		Nodes:   1,
		Expires: true,
		Service: Redis,
		Protects: "crashed holders (the key expires), deleting another client's lock (compare-and-delete), a holder that resumes after its lease " +
			"and asks owned() before writing",
		FailureModes: []string{
			"a pause between the owned() check and the write (K3): the write lands after the lease; no fencing token, only its uuid for " +
				"check-and-set",
			"while paused past its TTL the holder still believes it holds (K2): double ownership, though owned() then stops the write",
		},
		Points:    []string{"before-release"},
		Scenarios: []string{"byol/no-faults-redis-py", "byol/k2-redis-py", "byol/k3-redis-py"},
		External:  true,
		New:       adapterLock("redis-py"),
	})
	Register(Design{
		Name:    "kazoo",
		Renews:  true,
		Promise: zkAdapterPromise,
		Queued:  true,
		Fair:    true, // the lowest sequential node holds, each waiter watches its predecessor (_get_predecessor)
		Summary: "kazoo 2.8 kazoo.recipe.lock.Lock as it is (adapters/kazoo_lock.py): ephemeral sequential node, lowest holds; a careful " +
			"user follows the connection state (SUSPENDED, LOST) before writing",
		Source:  "kazoo 2.8 (Debian's python3-kazoo) kazoo.recipe.lock.Lock, run through the lock-client protocol",
		Token:   "czxid of the holder's lock node",
		Nodes:   1,
		Expires: true,
		Service: ZooKeeper,
		Protects: "crashed or cut-off holders (the ephemeral node goes with the session), herd effects, a holder whose listener saw " +
			"SUSPENDED or LOST before it writes",
		FailureModes: []string{
			"a pause between the state check and the write (K3): czxid fencing rescues",
			"the listener runs on kazoo's own thread: a check made right after a long pause may come before kazoo has noticed the lost session (K2)",
			"release of a lock whose session expired reports success (the node is gone either way)",
		},
		Scenarios: []string{"byol/no-faults-kazoo", "byol/k2-kazoo", "byol/k3-kazoo"},
		External:  true,
		New:       adapterLock("kazoo"),
	})
	Register(Design{
		Name:    "curator",
		Renews:  true,
		Promise: zkAdapterPromise,
		Queued:  true,
		Fair:    true, // the lowest sequential node holds, each waiter watches the one before it
		Summary: "Apache Curator 5.4 InterProcessMutex as it is (adapters/CuratorLock.java): protected ephemeral sequential node, lowest " +
			"holds; a careful user follows the connection state (SUSPENDED, LOST) before writing",
		Source:  "Apache Curator 5.4 (Debian's libcurator-recipes-java) InterProcessMutex, run through the lock-client protocol",
		Token:   "czxid of the holder's lock node",
		Nodes:   1,
		Expires: true,
		Service: ZooKeeper,
		Protects: "crashed or cut-off holders (the ephemeral node goes with the session), herd effects, lost create replies (protected " +
			"names), a holder whose listener saw SUSPENDED or LOST before it writes",
		FailureModes: []string{
			"a pause between the state check and the write (K3): czxid fencing rescues",
			"connection states reach the listener on Curator's event thread: a check made right after a long pause may come before Curator " +
				"has noticed (K2)",
			"release of a lock whose session expired reports success (the node is gone either way)",
		},
		Points:    []string{"before-release"},
		Scenarios: []string{"byol/no-faults-curator", "byol/k2-curator", "byol/k3-curator", "track-record/curator-release-connection-lost"},
		External:  true,
		New:       adapterLock("curator"),
	})

	// Variants: the libraries' other recipes and options, and the ways their users call them,
	// each the design of a published bug's reproduction (scenarios/track-record/).
	Register(Design{
		Name:      "redis-py-no-timeout",
		VariantOf: "redis-py",
		Summary: "redis-py 4.3 redis.lock.Lock with no timeout, the library's default (held until released); a release that loses its " +
			"connection is retried",
		Source:   "redis-py 4.3 (Debian's python3-redis) redis.lock.Lock(timeout=None), run through the lock-client protocol; redis-py PR #4258",
		Token:    "none",
		Nodes:    1,
		Expires:  false,
		Service:  Redis,
		Points:   []string{"before-release"},
		Protects: "deleting another client's lock (compare-and-delete)",
		FailureModes: []string{
			"a crashed holder's lock is never freed (no timeout)",
			"release() forgets its token before the delete runs: a connection lost there leaves a key that neither a retry nor anyone else " +
				"can release (fixed upstream by PR #4258)",
		},
		Scenarios: []string{"track-record/redis-py-release-connection-lost"},
		External:  true,
		New:       adapterLock("redis-py-no-timeout"),
	})
	Register(Design{
		Name:      "redis-py-reacquire",
		VariantOf: "redis-py",
		Summary: "redis-py 4.3 redis.lock.Lock(timeout=ttl, or 0 when the scenario has none: \"hold until released\"), renewed with " +
			"reacquire() before each step, trusting its True",
		Source:   "redis-py 4.3 (Debian's python3-redis) redis.lock.Lock.reacquire, run through the lock-client protocol; redis-py #4279",
		Token:    "none",
		Nodes:    1,
		Expires:  false,
		Service:  Redis,
		Protects: "deleting another client's lock (compare-and-delete); with a ttl, a crashed holder's lock expires",
		FailureModes: []string{
			"with timeout=0, reacquire() sends PEXPIRE key 0, which deletes the key, and returns True: the holder goes on while anyone can " +
				"take the lock (redis-py #4279)",
		},
		Scenarios: []string{"track-record/redis-py-reacquire-timeout-0"},
		External:  true,
		New:       adapterLock("redis-py-reacquire"),
	})
	Register(Design{
		Name:      "kazoo-rw",
		Renews:    true,
		Promise:   zkAdapterPromise,
		Queued:    true,
		Summary:   "kazoo 2.8 read/write lock as it is (kazoo.recipe.lock.ReadLock for readers, WriteLock for writers; adapters/kazoo_lock.py --rw)",
		Source:    "kazoo 2.8 (Debian's python3-kazoo) ReadLock and WriteLock, run through the lock-client protocol; kazoo #649",
		Token:     "czxid of the holder's lock node",
		Nodes:     1,
		Expires:   true,
		Service:   ZooKeeper,
		ReadWrite: true,
		Protects:  "as kazoo; readers share, a writer holds alone",
		FailureModes: []string{
			"a reader waits for the last writer in the queue, even one queued after it, which waits for the reader: deadlock until an " +
				"acquire times out (kazoo #649, fixed in 2.9.0)",
		},
		Scenarios: []string{"track-record/kazoo-rw-deadlock"},
		External:  true,
		New:       adapterLock("kazoo-rw"),
	})
	Register(Design{
		Name:      "kazoo-try",
		VariantOf: "kazoo",
		Renews:    true,
		Promise:   zkAdapterPromise,
		Summary: "kazoo 2.8 kazoo.recipe.lock.Lock taken without blocking (acquire(blocking=False)), a new Lock for every attempt, as a " +
			"worker polling a work queue does",
		Source:   "kazoo 2.8 (Debian's python3-kazoo) kazoo.recipe.lock.Lock, run through the lock-client protocol; kazoo #732",
		Token:    "czxid of the holder's lock node",
		Nodes:    1,
		Expires:  true,
		Service:  ZooKeeper,
		Points:   []string{"before-cleanup-delete", "cleanup-delete-sent"},
		Protects: "as kazoo",
		FailureModes: []string{
			"a failed attempt whose clean-up delete loses its connection leaves its contender node; the session survives, and the node " +
				"blocks every later acquire while it lives (kazoo #732, PR #760 unmerged)",
		},
		Scenarios: []string{"track-record/kazoo-try-orphaned-contender"},
		External:  true,
		New:       adapterLock("kazoo-try"),
	})
	Register(Design{
		Name:    "curator-rw",
		Renews:  true,
		Promise: zkAdapterPromise,
		Queued:  true,
		Summary: "Apache Curator 5.4 InterProcessReadWriteLock as it is: its read lock for readers, its write lock for writers " +
			"(adapters/CuratorLock.java rw)",
		Source:    "Apache Curator 5.4 (Debian's libcurator-recipes-java) InterProcessReadWriteLock, run through the lock-client protocol",
		Token:     "czxid of the holder's lock node",
		Nodes:     1,
		Expires:   true,
		Service:   ZooKeeper,
		ReadWrite: true,
		Points:    []string{"before-release"},
		Protects:  "as curator; readers share, a writer holds alone, a reader never overtakes a writer queued before it",
		FailureModes: []string{
			"as curator: a client paused past its session overlaps the next holders (K2)",
		},
		Scenarios: []string{"byol/no-faults-curator-rw"},
		External:  true,
		New:       adapterLock("curator-rw"),
	})
	Register(Design{
		Name:      "curator-rw-downgrade",
		VariantOf: "curator-rw",
		Renews:    true,
		Promise:   zkAdapterPromise,
		Queued:    true,
		Summary: "Apache Curator 5.4 InterProcessReadWriteLock whose writers downgrade: the release takes the read lock, then gives the " +
			"write lock back; the next section holds that read lock",
		Source: "Apache Curator 5.4 (Debian's libcurator-recipes-java) InterProcessReadWriteLock, lock downgrading as its documentation " +
			"describes it; CURATOR-621",
		Token:     "czxid of the holder's lock node",
		Nodes:     1,
		Expires:   true,
		Service:   ZooKeeper,
		ReadWrite: true,
		Points:    []string{"before-release"},
		Protects:  "as curator-rw",
		FailureModes: []string{
			"the downgraded read lock's node sorts after a writer already queued, which takes the write lock while the read lock is held " +
				"(CURATOR-621, fixed in 5.5.0)",
		},
		Scenarios: []string{"track-record/curator-rw-downgrade"},
		External:  true,
		New:       adapterLock("curator-rw-downgrade"),
	})
}

// adapterLock starts the named adapter as the client's lock program.
func adapterLock(name string) func(Env) (Lock, error) {
	return func(env Env) (Lock, error) {
		makeAdapterArchive(name, env)
		cmd, err := adapters.Command(name)
		if err != nil {
			return nil, err
		}
		return StartProgram(name, cmd, "", nil, env)
	}
}
