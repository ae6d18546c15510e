"""The follow agent: ONE long-running stream per deployment, printing JSON lines until the engine ends.

Sent on stdin to the host's python, after agents/common.py (which defines `alive`):
`python3 - '<json args>' < common.py+follow_agent.py`. Standard library only.

Lines out:
  {"t": "log", "o": END_OFFSET, "l": LINE}     a complete log line; END_OFFSET = byte offset just after it, so a
                                               bot that restarts resumes exactly there (no line lost or repeated)
  {"t": "health", "s": STATUS}                 GET /health changed (0 = no answer)
  {"t": "exit", "code": N | null, "alive": false}  the engine is gone (code from the supervisor's exit file)
  {"t": "hb"}                                  heartbeat while nothing happens, so a dead link is noticed

Like `tail -F`, it polls the file on the host itself (cheap, local), not over the network.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

if "alive" not in globals():  # run on its own (by hand, in a checkout) rather than sent after agents/common.py
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import alive  # noqa: E402

MAX_LINE = 4096


def health(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=1.5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except Exception:  # noqa: BLE001 - refused, reset, timeout: no answer
        return 0


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    args = json.loads(sys.argv[1])
    log_path = os.path.expanduser(args["log_path"])
    offset = int(args.get("offset", 0))
    pid = int(args["pid"])
    exit_path = args.get("exit_path")
    port = args.get("port")
    health_path = args.get("health_path", "/health")
    poll = float(args.get("poll_s", 0.2))
    health_every = float(args.get("health_every_s", 1.0))
    heartbeat_every = float(args.get("heartbeat_s", 10.0))
    pending = b""
    last_health = None
    next_health = 0.0
    last_emit = time.time()
    gone_since = None
    while True:
        grew = False
        try:
            with open(log_path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < offset:  # truncated or replaced: start over, like tail -F
                    offset, pending = 0, b""
                handle.seek(offset + len(pending))
                chunk = handle.read(1 << 20)
        except OSError:
            chunk = b""
        if chunk:
            grew = True
            data = pending + chunk
            lines = data.split(b"\n")
            pending = lines.pop()
            for raw in lines:
                offset += len(raw) + 1
                text = raw.decode("utf-8", "replace").rstrip("\r")
                emit({"t": "log", "o": offset, "l": text[:MAX_LINE]})
            last_emit = time.time()
            if len(pending) > MAX_LINE * 4:  # a line with no end (progress bars): flush what we have
                offset += len(pending)
                emit({"t": "log", "o": offset, "l": pending.decode("utf-8", "replace")[:MAX_LINE]})
                pending = b""
        now = time.time()
        if port and now >= next_health:
            status = health(int(port), health_path)
            next_health = now + health_every
            if status != last_health:
                last_health = status
                emit({"t": "health", "s": status})
                last_emit = now
        if not alive(pid):
            # Drain what the engine wrote last, then wait briefly for the supervisor's exit file.
            if gone_since is None:
                gone_since = now
            if not grew:
                code = None
                if exit_path:
                    try:
                        with open(os.path.expanduser(exit_path)) as handle:
                            code = int(handle.read().strip())
                    except (OSError, ValueError):
                        code = None
                if code is not None or now - gone_since > 2.0:
                    if pending:
                        offset += len(pending)
                        emit({"t": "log", "o": offset, "l": pending.decode("utf-8", "replace")[:MAX_LINE]})
                    emit({"t": "exit", "code": code, "alive": False})
                    return
        if now - last_emit >= heartbeat_every:
            emit({"t": "hb"})
            last_emit = now
        if not grew:
            time.sleep(poll)


if __name__ == "__main__":
    main()
