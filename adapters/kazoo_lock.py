#!/usr/bin/python3
"""kazoo's lock recipes (Debian's python3-kazoo, kazoo 2.8) on a ZooKeeper ensemble, as a careful
user runs them, behind lockcheck's lock-client protocol.

The recipe creates an ephemeral sequential node under /lockcheck/<key>; the lowest holds, a
waiter watches its predecessor, counting other libraries' lock nodes (-lock-N) too. The fencing token is the czxid of our lock node. A careful
user follows the connection state (kazoo's listener): after SUSPENDED the lock may be lost,
after LOST it is; so valid answers fail from then on, until the next acquire.

Which recipe, by the design (its command line):
  (none)   kazoo.recipe.lock.Lock, one per client, acquire(timeout=...)             (design kazoo)
  --rw     the read/write lock: ReadLock for a client whose role is read, WriteLock for a
           writer, one per client, acquire(timeout=...)                              (kazoo-rw)
  --try    Lock taken without blocking, acquire(blocking=False), with a new Lock for every
           attempt, as a worker polling a work queue does (kazoo #732's reporter)    (kazoo-try)
--try also announces two program points around the delete with which a failed attempt cleans up
its contender node: before-cleanup-delete, then cleanup-delete-sent once the request is queued.
For that the adapter puts its own delete on its KazooClient, which does what KazooClient.delete
does for one node (delete_async(path, version).get()) with the two announcements in between;
the recipe's logic is untouched: it makes the same call, gets the same answer or exception, and
handles it its own way.
"""
import sys
import threading
import time

from lockproto import error, fail, ok, point, serve

try:
    from kazoo.client import KazooClient, KazooState
    from kazoo.exceptions import CancelledError, LockTimeout
except ImportError as e:
    sys.exit("kazoo_lock.py needs kazoo: install Debian's python3-kazoo (%s)" % e)


class KazooLock:
    def __init__(self, init, mode="lock"):
        self.state = None
        self.lost = False
        self.lock = None
        self.mode = mode
        self.acquiring = False
        self.started = False
        self.path = "/lockcheck/" + init["lock"]
        self.identifier = init["client"]
        self.zk = KazooClient(
            hosts=",".join(init["nodes"]),
            timeout=init["ttl_ms"] / 1000 or 10,  # the session timeout
            # Reconnect soon, and let a command retry a little, never forever.
            connection_retry=dict(max_tries=-1, delay=0.05, backoff=2, max_delay=0.5),
            command_retry=dict(max_tries=3, delay=0.05, backoff=2, max_delay=0.5))
        self.zk.add_listener(self.on_state)
        self.zk.start(timeout=15)
        self.started = True
        if mode == "rw":
            role = init.get("role")
            if role == "read":
                self.lock = self.zk.ReadLock(self.path, self.identifier)
            elif role == "write":
                self.lock = self.zk.WriteLock(self.path, self.identifier)
            else:
                raise ValueError("kazoo-rw: client %s has role %r, want read or write" % (self.identifier, role))
        elif mode == "try":
            self.delete_one = self.zk.delete
            self.zk.delete = self.announcing_delete
        else:
            # Other ZooKeeper clients' lock nodes (go-zookeeper's and Curator's, _c_<guid>-lock-N)
            # count as contenders too, as kazoo's option for locks shared across implementations
            # asks: by default kazoo sees only its own __lock__ nodes, and takes the lock past them.
            self.lock = self.zk.Lock(self.path, self.identifier, extra_lock_patterns=["-lock-"])

    def on_state(self, state):
        # Called on kazoo's own thread: just remember.
        self.state = state
        if state == KazooState.LOST:
            self.lost = True
        if self.started:  # a change, in the client's log; CLOCK_MONOTONIC as in the history
            print("connection state %s at t=%d" % (state, time.monotonic_ns()), file=sys.stderr)

    def announcing_delete(self, path, version=-1, recursive=False):
        """KazooClient.delete for kazoo-try: inside an acquire (where the only delete is a failed
        attempt's clean-up) it announces the points around sending the request."""
        if not self.acquiring or recursive:
            return self.delete_one(path, version, recursive)
        point("before-cleanup-delete")
        sent = self.zk.delete_async(path, version)
        point("cleanup-delete-sent")
        return sent.get()

    def acquire(self, req):
        self.lost = False
        timeout = req["timeout_ms"] / 1000
        if self.mode == "try":
            lock = self.zk.Lock(self.path, self.identifier)
            self.acquiring = True
            try:
                got = lock.acquire(blocking=False, timeout=timeout)
            finally:
                self.acquiring = False
            if got:
                self.lock = lock
        else:
            # kazoo's timeout bounds each wait for a predecessor, and a wait starts again when
            # the predecessor goes: cancel() at the deadline bounds the whole attempt, as the
            # protocol asks. (A cancel that comes just after the lock was granted makes the next
            # attempt fail once: the recipe cleans up and resets it itself.)
            deadline = threading.Timer(timeout, self.lock.cancel)
            deadline.start()
            try:
                got = self.lock.acquire(timeout=timeout)
            except (LockTimeout, CancelledError):
                return fail("another client holds the lock")
            finally:
                deadline.cancel()
        if not got:  # busy, or kazoo gave up retrying: cut off from ZooKeeper
            if self.zk.connected:
                return fail("another client holds the lock")
            return error("not connected to ZooKeeper")
        stat = self.zk.exists(self.lock.path + "/" + self.lock.node)
        if stat is None:
            self.lock.release()
            return error("our lock node vanished right after acquiring")
        return ok(token=stat.czxid)

    def release(self, req):
        # kazoo's release returns False when this Lock does not hold it; a node already gone
        # (session expired) counts as released.
        if self.lock is not None and self.lock.release():
            return ok()
        return fail("this client does not hold the lock")

    def valid(self, req):
        if self.lock is None or not self.lock.is_acquired:
            return fail("this client does not hold the lock")
        if self.lost:
            return fail("session lost (LOST)")
        if self.state != KazooState.CONNECTED:
            return fail("connection %s" % self.state)
        return ok()

    def close(self):
        self.zk.stop()
        self.zk.close()


if __name__ == "__main__":
    modes = {"--rw": "rw", "--try": "try"}
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] not in modes):
        sys.exit("kazoo_lock.py: unknown options %r (one of: %s)" % (sys.argv[1:], ", ".join(modes)))
    mode = modes[sys.argv[1]] if len(sys.argv) == 2 else "lock"
    serve(lambda init: KazooLock(init, mode))
