#!/usr/bin/python3
"""kazoo's lock recipe, kazoo.recipe.lock.Lock (Debian's python3-kazoo, kazoo 2.8), on a
ZooKeeper ensemble, as a careful user runs it, behind lockcheck's lock-client protocol.

The recipe creates an ephemeral sequential node under /lockcheck/<key>; the lowest holds, a
waiter watches its predecessor, counting other libraries' lock nodes (-lock-N) too. The fencing token is the czxid of our lock node. A careful
user follows the connection state (kazoo's listener): after SUSPENDED the lock may be lost,
after LOST it is; so valid answers fail from then on, until the next acquire.
"""
import sys
import time

from lockproto import error, fail, ok, serve

try:
    from kazoo.client import KazooClient, KazooState
    from kazoo.exceptions import LockTimeout
except ImportError as e:
    sys.exit("kazoo_lock.py needs kazoo: install Debian's python3-kazoo (%s)" % e)


class KazooLock:
    def __init__(self, init):
        self.state = None
        self.lost = False
        self.lock = None
        self.zk = KazooClient(
            hosts=",".join(init["nodes"]),
            timeout=init["ttl_ms"] / 1000 or 10,  # the session timeout
            # Reconnect soon, and let a command retry a little, never forever.
            connection_retry=dict(max_tries=-1, delay=0.05, backoff=2, max_delay=0.5),
            command_retry=dict(max_tries=3, delay=0.05, backoff=2, max_delay=0.5))
        self.zk.add_listener(self.on_state)
        self.zk.start(timeout=15)
        # Other ZooKeeper clients' lock nodes (go-zookeeper's and Curator's, _c_<guid>-lock-N)
        # count as contenders too, as kazoo's option for locks shared across implementations
        # asks: by default kazoo sees only its own __lock__ nodes, and takes the lock past them.
        self.lock = self.zk.Lock("/lockcheck/" + init["lock"], init["client"], extra_lock_patterns=["-lock-"])

    def on_state(self, state):
        # Called on kazoo's own thread: just remember.
        self.state = state
        if state == KazooState.LOST:
            self.lost = True
        if self.lock is not None:  # a change, in the client's log; CLOCK_MONOTONIC as in the history
            print("connection state %s at t=%d" % (state, time.monotonic_ns()), file=sys.stderr)

    def acquire(self, req):
        self.lost = False
        try:
            got = self.lock.acquire(timeout=req["timeout_ms"] / 1000)
        except LockTimeout:
            return fail("another client holds the lock")
        if not got:  # kazoo gave up retrying: busy, or cut off from ZooKeeper
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
        if self.lock.release():
            return ok()
        return fail("this client does not hold the lock")

    def valid(self, req):
        if not self.lock.is_acquired:
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
    serve(KazooLock)
