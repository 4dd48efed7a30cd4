#!/usr/bin/python3
# A lock adapter in 30 lines: SET NX PX with a fencing token, released by compare-and-delete.
import json, sys, uuid
import redis  # Debian's python3-redis

RELEASE = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end'

def answer(req, type, **fields):  # one JSON object per line, flushed
    print(json.dumps(dict(fields, in_reply_to=req["id"], type=type)), flush=True)

for line in sys.stdin:
    req = json.loads(line)
    try:
        if req["type"] == "init":
            host, port = req["nodes"][0].rsplit(":", 1)
            r = redis.Redis(host=host, port=int(port), socket_timeout=req["timeout_ms"] / 1000)
            key, ttl = req["lock"], req["ttl_ms"]
            answer(req, "ok")
        elif req["type"] == "acquire":
            value = uuid.uuid4().hex
            if r.set(key, value, nx=True, px=ttl):
                answer(req, "ok", token=r.incr(key + ":token"), value=value)
            else:
                answer(req, "fail", error="held by another client")
        elif req["type"] == "release":
            answer(req, "ok" if r.eval(RELEASE, 1, key, value) else "fail")
        elif req["type"] == "close":
            answer(req, "ok")
            break
    except redis.RedisError as e:  # the outcome is unknown
        answer(req, "error", error=str(e))
