#!/usr/bin/python3
"""redis-py's own lock, redis.lock.Lock (Debian's python3-redis, redis-py 4.3), as a careful user
runs it, behind lockcheck's lock-client protocol.

The library takes the lock with SET key <uuid> NX [PX timeout] and releases it with its own Lua
compare-and-delete; owned() reads the key back. It has no fencing token; its random value (the
uuid) is the lock's value, which lockcheck's check-and-set register can use. One attempt per
acquire request (blocking=False): the worker retries with its own backoff, as for every design.

How the lock is made, by the design (its command line):
  (none)          timeout = the scenario's ttl: a lease; valid asks owned()      (design redis-py)
  --no-timeout    no timeout, the library's default: held until released        (redis-py-no-timeout)
  --reacquire     timeout = the ttl, 0 when there is none (redis-py's "hold until released" as
                  redis-py #4279's reporter wrote it), and valid renews the lease with
                  reacquire(), trusting its True, as a long job renews before each step
                                                                                (redis-py-reacquire)
Every release announces the point before-release, then calls release(); if that fails for a
connection reason, the careful user calls release() again until the request's time is up: the
lock may still be there, and nobody else can give it back.
"""
import sys
import time
from functools import partial

from lockproto import error, fail, ok, point, serve

try:
    import redis
    from redis.exceptions import ConnectionError, LockError, LockNotOwnedError, TimeoutError
except ImportError as e:
    sys.exit("redis_py_lock.py needs redis-py: install Debian's python3-redis (%s)" % e)


class RedisPyLock:
    def __init__(self, init, timeout="ttl", reacquire=False):
        host, port = init["nodes"][0].rsplit(":", 1)
        socket_timeout = init["timeout_ms"] / 1000 or None
        self.redis = redis.Redis(host=host, port=int(port), socket_timeout=socket_timeout,
                                 socket_connect_timeout=socket_timeout)
        ttl = init["ttl_ms"] / 1000
        self.reacquire = reacquire
        if timeout == "none":
            lock_timeout = None
        elif reacquire:
            lock_timeout = ttl or 0  # 0, not None: Lock(timeout=0) as redis-py #4279 has it
        else:
            lock_timeout = ttl or None
        self.lock = self.redis.lock(init["lock"], timeout=lock_timeout)

    def acquire(self, req):
        if self.lock.acquire(blocking=False):
            return ok(value=self.lock.local.token.decode())
        return fail("held by another client")

    def release(self, req):
        point("before-release")
        deadline = time.monotonic() + req["timeout_ms"] / 1000
        lost = None  # the connection error of a first attempt
        while True:
            try:
                self.lock.release()
            except LockNotOwnedError as e:  # expired and maybe taken
                return fail(str(e)) if lost is None else error("%s; then: %s" % (lost, e))
            except LockError as e:  # not held, as far as the library knows
                return fail(str(e)) if lost is None else error("%s; retried: %s" % (lost, e))
            except (ConnectionError, TimeoutError) as e:
                if lost is None:
                    lost = "%s: %s" % (type(e).__name__, e)
                if time.monotonic() + 0.1 > deadline:
                    return error("%s; no connection to retry on before the request's time was up" % lost)
                time.sleep(0.1)
                continue
            return ok()

    def valid(self, req):
        if self.reacquire:
            # Renew to the full timeout; the library's True says the lock is still ours.
            try:
                self.lock.reacquire()
            except LockError as e:  # LockNotOwnedError included
                return fail("reacquire: %s" % e)
            return ok()
        # A careful user asks before writing: is the key still ours?
        return ok() if self.lock.owned() else fail("the key is gone or another client's")

    def close(self):
        self.redis.close()


if __name__ == "__main__":
    options = {}
    for arg in sys.argv[1:]:
        if arg == "--no-timeout":
            options["timeout"] = "none"
        elif arg == "--reacquire":
            options["reacquire"] = True
        else:
            sys.exit("redis_py_lock.py: unknown option %r (options: --no-timeout, --reacquire)" % arg)
    serve(partial(RedisPyLock, **options))
