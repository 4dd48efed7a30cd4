#!/usr/bin/python3
"""redis-py's own lock, redis.lock.Lock (Debian's python3-redis, redis-py 4.3), as a careful user
runs it, behind lockcheck's lock-client protocol.

The library takes the lock with SET key <uuid> NX PX ttl and releases it with its own Lua
compare-and-delete; owned() reads the key back. It has no fencing token; its random value (the
uuid) is the lock's value, which lockcheck's check-and-set register can use. One attempt per
acquire request (blocking=False): the worker retries with its own backoff, as for every design.
"""
import sys

from lockproto import error, fail, ok, serve

try:
    import redis
    from redis.exceptions import LockError, LockNotOwnedError
except ImportError as e:
    sys.exit("redis_py_lock.py needs redis-py: install Debian's python3-redis (%s)" % e)


class RedisPyLock:
    def __init__(self, init):
        host, port = init["nodes"][0].rsplit(":", 1)
        timeout = init["timeout_ms"] / 1000 or None
        self.redis = redis.Redis(host=host, port=int(port), socket_timeout=timeout,
                                 socket_connect_timeout=timeout)
        self.lock = self.redis.lock(init["lock"], timeout=init["ttl_ms"] / 1000 or None)

    def acquire(self, req):
        if self.lock.acquire(blocking=False):
            return ok(value=self.lock.local.token.decode())
        return fail("held by another client")

    def release(self, req):
        try:
            self.lock.release()
        except (LockNotOwnedError, LockError) as e:  # expired and maybe taken; or never held
            return fail(str(e))
        return ok()

    def valid(self, req):
        # A careful user asks before writing: is the key still ours?
        return ok() if self.lock.owned() else fail("the key is gone or another client's")

    def close(self):
        self.redis.close()


if __name__ == "__main__":
    serve(RedisPyLock)
