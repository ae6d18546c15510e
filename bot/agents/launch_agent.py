"""The launch agent: starts an engine detached on the host and records it; idempotent.

Sent on stdin to the host's python, after agents/common.py (which defines `alive`):
`python3 - '<json args>' < common.py+launch_agent.py`. Standard library only.

Detached the way `setsid nohup CMD > LOG 2>&1 < /dev/null &` is: a new session (no controlling terminal, so no
SIGHUP when the SSH channel closes), stdin from /dev/null, stdout and stderr into the log. A tiny `sh` supervisor
sits between so that the exit code is written next to the log when the engine ends (the bot is not its parent
and could not otherwise learn it). The argv is passed to `sh` as positional parameters and run as `"$@"`: no value
is ever parsed by a shell.

Idempotent: a launch record (`<key>.launch.json` next to the log) names the deployment; a repeated launch of the
same deployment whose process is still alive returns the record instead of starting a second server.
"""

import json
import os
import signal
import subprocess
import sys
import time

if "alive" not in globals():  # run on its own (by hand, in a checkout) rather than sent after agents/common.py
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import alive  # noqa: E402

# The trap comes after the fork so the engine keeps default signal handling, while the supervisor survives the
# group-wide TERM of `stop` long enough to write the engine's exit status.
SUPERVISOR = (
    'pidfile=$1; exitfile=$2; shift 2; "$@" & child=$!; echo $child > "$pidfile"; '
    "trap '' TERM INT HUP; wait $child; echo $? > \"$exitfile\""
)


def read_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def expand(arg):
    return os.path.expanduser(arg) if arg.startswith("~/") else arg


def launch(args):
    log_dir = os.path.expanduser(args["log_dir"])
    os.makedirs(log_dir, exist_ok=True)
    key = args["key"]
    record_path = os.path.join(log_dir, key + ".launch.json")
    record = read_json(record_path)
    if record and record.get("deployment_id") == args["deployment_id"]:
        # Launched before (a retried request, a bot restarted mid-launch): never start a second server.
        record["already_running"] = alive(record["pid"])
        record["already_launched"] = True
        return record
    if record and alive(record.get("pid", -1)):
        return {"error": "busy", "message": "%s is already running as PID %d (deployment %s, started %s)" % (
            key, record["pid"], record.get("deployment_id"), record.get("started_at_iso"))}
    log_path = os.path.join(log_dir, key + ".log")
    pid_path = os.path.join(log_dir, key + ".pid")
    exit_path = os.path.join(log_dir, key + ".exit")
    for stale in (pid_path, exit_path):
        if os.path.exists(stale):
            os.unlink(stale)
    env = dict(os.environ)
    env.update(args.get("env") or {})
    argv = [expand(a) for a in args["argv"]]
    with open(log_path, "ab") as log, open(os.devnull, "rb") as devnull:
        log_offset = log.tell()
        supervisor = subprocess.Popen(
            ["sh", "-c", SUPERVISOR, "sh", pid_path, exit_path, *argv],
            stdin=devnull, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, close_fds=True, cwd=os.path.expanduser("~"),
        )
    pid = None
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with open(pid_path) as handle:
                text = handle.read().strip()
            if text:
                pid = int(text)
                break
        except (OSError, ValueError):
            pass
        if supervisor.poll() is not None:
            break
        time.sleep(0.01)
    if pid is None:
        return {"error": "no_pid", "message": "the engine did not start (supervisor exit %s)" % supervisor.poll()}
    record = {
        "deployment_id": args["deployment_id"],
        "plan_hash": args.get("plan_hash"),
        "key": key,
        "pid": pid,
        "pgid": supervisor.pid,  # start_new_session: the supervisor leads the process group
        "log_path": log_path,
        "log_offset": log_offset,
        "exit_path": exit_path,
        "argv": argv,
        "started_at": time.time(),
        "started_at_iso": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "already_running": False,
        "already_launched": False,
    }
    tmp = record_path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(record, handle)
    os.replace(tmp, record_path)
    return record


def stop(args):
    """TERM the process group, KILL after the grace period; report what happened."""
    log_dir = os.path.expanduser(args["log_dir"])
    record = read_json(os.path.join(log_dir, args["key"] + ".launch.json"))
    pid = args.get("pid") or (record or {}).get("pid")
    pgid = args.get("pgid") or (record or {}).get("pgid")
    if not pid:
        return {"stopped": False, "message": "no launch record and no PID"}
    if not alive(pid):
        return {"stopped": True, "was_running": False, "pid": pid}
    targets = [pgid] if pgid else []
    try:
        if pgid:
            os.killpg(pgid, signal.SIGTERM)
        else:
            os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError:
        return {"stopped": False, "message": "not allowed to signal PID %d (another user's process)" % pid}
    deadline = time.time() + float(args.get("grace_s", 20))
    while time.time() < deadline and alive(pid):
        time.sleep(0.1)
    killed = False
    if alive(pid):
        killed = True
        try:
            if pgid:
                os.killpg(pgid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for _ in range(50):
            if not alive(pid):
                break
            time.sleep(0.1)
    return {"stopped": not alive(pid), "was_running": True, "pid": pid, "killed": killed, "targets": targets}


def main():
    args = json.loads(sys.argv[1])
    action = args.get("action", "launch")
    result = launch(args) if action == "launch" else stop(args)
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main()
