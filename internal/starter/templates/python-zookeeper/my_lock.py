#!/usr/bin/python3
"""A lock adapter for lockcheck: put YOUR lock here, behind the lock-client protocol.

lockcheck starts this program once per client and writes one JSON request per line on its stdin
(init, acquire, release, valid, close); it answers each with one JSON line on stdout:
{"in_reply_to": <id>, "type": "ok" | "fail" | "error", ...}. stdout is the protocol's: log to
stderr. The protocol is described in lockcheck's docs/LOCK-PROTOCOL.md.

As written it is kazoo's lock recipe on ZooKeeper: an ephemeral sequential node, the lowest
holds; the fencing token is the czxid of our node; a holder whose session was suspended or lost
no longer believes it holds. Replace the bodies of acquire(), release() and valid() with calls
to your own lock; keep the answers' shape. It needs kazoo: Debian's python3-kazoo (for
/usr/bin/python3) or `pip install kazoo`.
"""
import json
import sys

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout


class MyLock:
    def __init__(self, init):
        # init: client (its name), nodes (["host:port", ...], through the client's own proxies),
        # lock (the key), ttl_ms (the session timeout), timeout_ms (bound on one command).
        self.zk = KazooClient(hosts=",".join(init["nodes"]), timeout=init["ttl_ms"] / 1000 or 10,
                              connection_retry=dict(max_tries=-1, delay=0.05, max_delay=0.5),
                              command_retry=dict(max_tries=3, delay=0.05, max_delay=0.5))
        self.state = None
        self.zk.add_listener(self.on_state)  # called on kazoo's thread: only remember
        self.zk.start(timeout=15)
        self.lock = self.zk.Lock("/my-lock/" + init["lock"], init["client"])
        self.suspended = False

    def on_state(self, state):
        self.state = state
        if state != KazooState.CONNECTED:
            self.suspended = True

    def acquire(self, req):
        """One attempt, never waiting longer than req["timeout_ms"]: ok (held, with the fencing
        token), fail (certainly not held) or error (unknown)."""
        self.suspended = False
        try:
            got = self.lock.acquire(timeout=req["timeout_ms"] / 1000)
        except LockTimeout:
            return {"type": "fail", "error": "another client holds the lock"}
        if not got:
            if self.zk.connected:
                return {"type": "fail", "error": "another client holds the lock"}
            return {"type": "error", "error": "not connected to ZooKeeper"}
        stat = self.zk.exists(self.lock.path + "/" + self.lock.node)
        if stat is None:
            self.lock.release()
            return {"type": "error", "error": "our lock node vanished right after acquiring"}
        return {"type": "ok", "token": stat.czxid}

    def release(self, req):
        if self.lock.release():
            return {"type": "ok"}
        return {"type": "fail", "error": "this client does not hold the lock"}

    def valid(self, req):
        """Asked before each write: does this client still believe it holds the lock?"""
        if not self.lock.is_acquired or self.suspended or self.state != KazooState.CONNECTED:
            return {"type": "fail", "error": "not held, or the session was suspended or lost"}
        return {"type": "ok"}

    def close(self):
        self.zk.stop()
        self.zk.close()


def main():
    lock = None
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        try:
            if kind == "init":
                lock = MyLock(req)
                answer = {"type": "ok", "valid": True}  # "valid": we answer valid requests
            elif kind in ("acquire", "release", "valid"):
                answer = getattr(lock, kind)(req)
            elif kind == "close":
                lock.close()
                answer = {"type": "ok"}
            else:
                answer = {"type": "error", "error": "unknown request %r" % kind}
        except Exception as e:  # a timeout, a lost connection: the outcome is unknown
            answer = {"type": "error", "error": "%s: %s" % (type(e).__name__, e)}
        answer["in_reply_to"] = req["id"]
        print(json.dumps(answer), flush=True)
        if kind == "close":
            break


if __name__ == "__main__":
    main()
