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
			"a pause between the owned() check and the write (K3): the write lands after the lease; no fencing token, only its uuid for check-and-set",
			"while paused past its TTL the holder still believes it holds (K2): double ownership, though owned() then stops the write",
		},
		Scenarios: []string{"byol/no-faults-redis-py", "byol/k2-redis-py", "byol/k3-redis-py"},
		External:  true,
		New:       adapterLock("redis-py"),
	})
	Register(Design{
		Name:   "kazoo",
		Renews: true,
		Queued: true,
		Summary: "kazoo 2.8 kazoo.recipe.lock.Lock as it is (adapters/kazoo_lock.py): ephemeral sequential node, lowest holds; a careful user " +
			"follows the connection state (SUSPENDED, LOST) before writing",
		Source:  "kazoo 2.8 (Debian's python3-kazoo) kazoo.recipe.lock.Lock, run through the lock-client protocol",
		Token:   "czxid of the holder's lock node",
		Nodes:   1,
		Expires: true,
		Service: ZooKeeper,
		Protects: "crashed or cut-off holders (the ephemeral node goes with the session), herd effects, a holder whose listener saw SUSPENDED or " +
			"LOST before it writes",
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
		Name:   "curator",
		Renews: true,
		Queued: true,
		Summary: "Apache Curator 5.4 InterProcessMutex as it is (adapters/CuratorLock.java): protected ephemeral sequential node, lowest holds; " +
			"a careful user follows the connection state (SUSPENDED, LOST) before writing",
		Source:  "Apache Curator 5.4 (Debian's libcurator-recipes-java) InterProcessMutex, run through the lock-client protocol",
		Token:   "czxid of the holder's lock node",
		Nodes:   1,
		Expires: true,
		Service: ZooKeeper,
		Protects: "crashed or cut-off holders (the ephemeral node goes with the session), herd effects, lost create replies (protected names), a " +
			"holder whose listener saw SUSPENDED or LOST before it writes",
		FailureModes: []string{
			"a pause between the state check and the write (K3): czxid fencing rescues",
			"connection states reach the listener on Curator's event thread: a check made right after a long pause may come before Curator has noticed (K2)",
			"release of a lock whose session expired reports success (the node is gone either way)",
		},
		Scenarios: []string{"byol/no-faults-curator", "byol/k2-curator", "byol/k3-curator"},
		External:  true,
		New:       adapterLock("curator"),
	})
}

// adapterLock starts the named adapter as the client's lock program.
func adapterLock(name string) func(Env) (Lock, error) {
	return func(env Env) (Lock, error) {
		cmd, err := adapters.Command(name)
		if err != nil {
			return nil, err
		}
		return StartProgram(name, cmd, "", nil, env)
	}
}
