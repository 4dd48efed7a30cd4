"""lockcheck's lock-client protocol for Python adapters (docs/LOCK-PROTOCOL.md).

The worker writes one JSON request per line on our stdin; we answer each on stdout with
{"in_reply_to": id, "type": "ok" | "fail" | "error", ...}. serve() runs that loop around a
class you write: __init__(init) builds the client from the init request, and acquire(req),
release(req), optionally valid(req), and close() answer with ok(), fail() or error(). An
exception becomes an error answer (outcome unknown). Logs go to stderr: stdout is the protocol's.
"""
import json
import sys


def ok(**fields):
    """The operation took effect (acquire may add token=... and value=...)."""
    return dict(fields, type="ok")


def fail(reason):
    """The operation certainly did not take effect (acquire: busy; release: not held)."""
    return {"type": "fail", "error": reason}


def error(reason):
    """The outcome is unknown."""
    return {"type": "error", "error": reason}


def _send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def point(name):
    """Announce a program point; the worker may freeze the whole client here. Returns when it
    says continue."""
    _send({"type": "point", "name": name})
    line = sys.stdin.readline()
    if json.loads(line).get("type") != "continue":
        raise RuntimeError("expected continue after point %s, got %r" % (name, line))


def serve(lock_class):
    client = None
    while True:
        line = sys.stdin.readline()
        if not line:
            break  # the worker is gone
        req = json.loads(line)
        kind = req["type"]
        try:
            if kind == "init":
                client = lock_class(req)
                answer = ok(valid=hasattr(client, "valid"))
            elif kind == "close":
                client.close()
                answer = ok()
            elif kind in ("acquire", "release", "valid"):
                answer = getattr(client, kind)(req)
            else:
                answer = error("unknown request type %r" % kind)
        except Exception as e:  # the library failed: we do not know what happened
            answer = error("%s: %s" % (type(e).__name__, e))
        answer["in_reply_to"] = req["id"]
        _send(answer)
        if kind == "close":
            break
