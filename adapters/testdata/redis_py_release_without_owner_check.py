#!/usr/bin/python3
"""A deliberately broken adapter, for lockcheck's own tests: redis-py's lock (../redis_py_lock.py),
except that release deletes the key without checking that it is still ours (the mistake of
releasing by plain DEL). The scenarios that redis-py passes must flag it.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lockproto import ok, serve  # noqa: E402
from redis_py_lock import RedisPyLock  # noqa: E402


class ReleaseWithoutOwnerCheck(RedisPyLock):
    def release(self, req):
        self.redis.delete(self.lock.name)  # whoever holds it now
        self.lock.local.token = None
        return ok()


if __name__ == "__main__":
    serve(ReleaseWithoutOwnerCheck)
