#!/usr/bin/python3
"""A lock adapter for lockcheck: put YOUR lock here, behind the lock-client protocol.

lockcheck starts this program once per client and writes one JSON request per line on its stdin
(init, acquire, release, valid, close); it answers each with one JSON line on stdout:
{"in_reply_to": <id>, "type": "ok" | "fail" | "error", ...}. stdout is the protocol's: log to
stderr. The protocol is described in lockcheck's docs/LOCK-PROTOCOL.md.

As written it is Redis's single-instance lock: SET key <random> NX PX ttl to take, a fencing
token from INCR, release by compare-and-delete, and it passes every starter scenario. Replace the
bodies of acquire(), release() and valid() with calls to your own lock; keep the answers' shape.
It needs redis-py: Debian's python3-redis (for /usr/bin/python3) or `pip install redis`.
"""
import json
import sys
import uuid

import redis

# Give the lock back only if it is still ours (a plain DEL would delete the next holder's lock).
RELEASE = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end'


class MyLock:
    def __init__(self, init):
        # init: client (its name), nodes (["host:port"], through the client's own proxies),
        # lock (the key), ttl_ms, timeout_ms (bound on one command).
        host, port = init["nodes"][0].rsplit(":", 1)
        self.r = redis.Redis(host=host, port=int(port), socket_timeout=init["timeout_ms"] / 1000,
                             socket_connect_timeout=init["timeout_ms"] / 1000)
        self.key, self.ttl_ms = init["lock"], init["ttl_ms"]
        self.value = None

    def acquire(self, req):
        """One attempt, never waiting longer than req["timeout_ms"]: ok (held, with the fencing
        token and the lock's value), fail (certainly not held) or error (unknown)."""
        value = uuid.uuid4().hex
        if not self.r.set(self.key, value, nx=True, px=self.ttl_ms):
            return {"type": "fail", "error": "held by another client"}
        self.value = value
        return {"type": "ok", "token": self.r.incr(self.key + ":token"), "value": value}

    def release(self, req):
        if self.r.eval(RELEASE, 1, self.key, self.value):
            return {"type": "ok"}
        return {"type": "fail", "error": "not held: expired, or another client's"}

    def valid(self, req):
        """Asked before each write: does this client still believe it holds the lock?"""
        if self.value is not None and self.r.get(self.key) == self.value.encode():
            return {"type": "ok"}
        return {"type": "fail", "error": "the key is no longer ours"}

    def close(self):
        self.r.close()


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
