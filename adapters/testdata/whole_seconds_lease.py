#!/usr/bin/python3
"""A lock that rounds its lease up to whole seconds, two at the least, for lockcheck's own tests
(the lease the servers kept, docs/VERDICTS.md), as some libraries do: SET key <id> NX PX with
max(2, ceil(ttl)) seconds, released by a compare-and-delete. Given a 400 ms ttl, its key lives 2 s.
"""
import math
import os
import sys
import uuid

import redis

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lockproto import error, fail, ok, serve  # noqa: E402

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0"""


class WholeSecondsLease:
    def __init__(self, init):
        host, port = init["nodes"][0].rsplit(":", 1)
        self.r = redis.Redis(host=host, port=int(port), socket_timeout=init["timeout_ms"] / 1000)
        self.key = init["lock"]
        self.lease_ms = max(2, math.ceil(init["ttl_ms"] / 1000)) * 1000
        self.me = uuid.uuid4().hex

    def acquire(self, req):
        try:
            if self.r.set(self.key, self.me, nx=True, px=self.lease_ms):
                return ok(token=self.r.incr(self.key + ":token"))
        except redis.RedisError as e:
            return error(str(e))
        return fail("held by another client")

    def release(self, req):
        try:
            n = self.r.eval(RELEASE, 1, self.key, self.me)
        except redis.RedisError as e:
            return error(str(e))
        return ok() if n else fail("not held")


if __name__ == "__main__":
    serve(WholeSecondsLease)
