#!/usr/bin/python3
"""A lock that takes over an abandoned lease only inside one long acquire, for lockcheck's own tests
(the exercised judgement, docs/SCENARIOS.md). The key never expires on the server: the holder's
heartbeat rewrites it every ttl/4, and a waiter takes the lock over only when it has watched the
key stay the same for a whole ttl within one acquire call. An acquire waits until the request's
timeout_ms, so with attempts shorter than the ttl no waiter ever takes over, and a holder cut off
from Redis leaves the lock with nobody while the cut lasts. The heartbeat runs on the lock's own
thread, from init to close, never tied to one request.
"""
import os
import sys
import threading
import time
import uuid

import redis

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lockproto import error, fail, ok, serve  # noqa: E402

# Rewrite the key only while it is still ours (our id before the colon).
BEAT = """
local v = redis.call('get', KEYS[1])
if v and string.sub(v, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ':' then
  redis.call('set', KEYS[1], ARGV[2]) return 1
end
return 0"""
# Take the key over only if it still holds what the waiter watched.
SWAP = """
if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[1], ARGV[2]) return 1 end
return 0"""
RELEASE = """
local v = redis.call('get', KEYS[1])
if v and string.sub(v, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ':' then return redis.call('del', KEYS[1]) end
return 0"""


class TakeoverInOneAttempt:
    def __init__(self, init):
        host, port = init["nodes"][0].rsplit(":", 1)
        self.r = redis.Redis(host=host, port=int(port), socket_timeout=init["timeout_ms"] / 1000)
        self.key, self.ttl = init["lock"], init["ttl_ms"] / 1000
        self.me = uuid.uuid4().hex
        self.beats = 0
        self.holding = threading.Event()
        self.closed = threading.Event()
        threading.Thread(target=self.heartbeat, daemon=True).start()

    def value(self):
        self.beats += 1
        return "%s:%d" % (self.me, self.beats)

    def heartbeat(self):
        while not self.closed.wait(self.ttl / 4):
            if self.holding.is_set():
                try:
                    self.r.eval(BEAT, 1, self.key, self.me, self.value())
                except redis.RedisError as e:
                    print("heartbeat: %s" % e, file=sys.stderr, flush=True)

    def acquire(self, req):
        deadline = time.monotonic() + req["timeout_ms"] / 1000 - 0.05
        seen, since = None, 0.0
        while True:
            if self.r.set(self.key, self.value(), nx=True):
                return self.took()
            v = self.r.get(self.key)
            now = time.monotonic()
            if v != seen:
                seen, since = v, now
            elif now - since >= self.ttl and self.r.eval(SWAP, 1, self.key, v, self.value()):
                return self.took()
            if now + 0.02 > deadline:
                return fail("held by another client")
            time.sleep(0.02)

    def took(self):
        self.holding.set()
        return ok(token=self.r.incr(self.key + ":token"))

    def release(self, req):
        self.holding.clear()
        try:
            n = self.r.eval(RELEASE, 1, self.key, self.me)
        except redis.RedisError as e:
            return error(str(e))
        return ok() if n else fail("not held")

    def close(self):
        self.closed.set()


if __name__ == "__main__":
    serve(TakeoverInOneAttempt)
