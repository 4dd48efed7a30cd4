//go:build !quickstart

package locks

// zk-rw: the ZooKeeper read/write lock (读写锁 in the Chinese notes on ZooKeeper and Redis locks;
// Apache Curator's InterProcessReadWriteLock), on the same code as zk-session-aware
// (zk_session_aware.go). Every client creates an EPHEMERAL_SEQUENTIAL protected node under
// /lockcheck/<key>: readers _c_<guid>-__READ__NNNNNNNNNN, writers _c_<guid>-__WRIT__NNNNNNNNNN
// (Env.Role decides). A reader holds when no writer node is ahead of it and watches the last writer
// ahead of it otherwise; a writer holds when its node is first and watches its predecessor. The
// fencing token is the czxid of the client's own node: readers holding together have different
// tokens, and a writer's token exceeds those of the readers before it.
//
// Session handling is zk-session-aware's (locks.Expiring), and so are its failure modes: a paused
// writer (K2, K3) overlaps the next holders once its session expires. Readers share the lock by
// design: the checker must count only writer/writer and writer/reader overlaps as violations.

import "fmt"

func init() {
	Register(Design{
		Promise: zkPromise,
		Name:    "zk-rw",
		Renews:  true,
		Queued:  true,
		Fair:    true, // in node order; readers together only when no writer is ahead of them
		Summary: "ZooKeeper read/write lock: __READ__/__WRIT__ EPHEMERAL_SEQUENTIAL protected nodes; readers share unless a writer is " +
			"ahead; a writer holds when first",
		Source:    "Apache Curator InterProcessReadWriteLock; Chinese notes on ZooKeeper and Redis locks (read/write lock)",
		Token:     "czxid of the holder's lock node",
		Nodes:     1,
		Expires:   true,
		Service:   ZooKeeper,
		ReadWrite: true,
		Points:    nil,
		Blocking:  "a watch on the node it waits for (its predecessor, or the last writer ahead of a reader)",
		Protects:  "as zk-session-aware; readers run together, a writer runs alone, and a reader never overtakes a writer queued before it",
		FailureModes: []string{
			"as zk-session-aware: a client paused past the session timeout overlaps the next holders (K2), a pause between check and write is not " +
				"caught (K3); czxid fencing rescues",
			"readers exclude only writers: a read hold is shared, so a reader that writes can lose another reader's update",
		},
		Scenarios: []string{"no-faults-zk-rw"},
		New: func(env Env) (Lock, error) {
			switch env.Role {
			case ReadRole:
				return newZKRecipe(env, zkReadKind), nil
			case WriteRole:
				return newZKRecipe(env, zkWriteKind), nil
			}
			return nil, fmt.Errorf("zk-rw: client %s has role %q, want %q or %q", env.Client, env.Role, ReadRole, WriteRole)
		},
	})
}
