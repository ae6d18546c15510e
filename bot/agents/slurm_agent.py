"""The Slurm agent: run on a cluster's login node by the Slurm backend (bot/backends/slurm.py), one round trip per
call (watch: one long stream). Standard library only; it drives the Slurm client commands of the login node.

    python3 - '{"action": "launch" | "watch" | "stop" | "state", ...}' < common.py+slurm_agent.py

Output formats are Slurm's own, asked for in machine-readable form (squeue(1) `--noheader --format`, `%i` job id,
`%j` name, `%T` state, `%r` reason, `%N` nodes, `%P` partition, `%k` comment; scontrol(1) `show job --oneliner`
for ExitCode and the final state, kept by the controller for MinJobAge after the end; sacct(1) `--parsable2
--noheader` after that, where the cluster has accounting). Checked against slurm-wlm 22.05 (tests/slurm.py).

launch: look the job name (the deployment key) up first; a job of the same deployment (its id is in the job's
  comment) is returned as it is, whatever its state: nothing is submitted twice. Another live deployment under that
  name is "busy". Otherwise the job script is written next to the log and submitted with sbatch. The lookup and the
  submit hold a lock file in the log folder, so two launches racing from two bots cannot both submit.
watch: lines {"t": "log", "o": END_OFFSET, "l": LINE}, {"t": "queued", "reason": "Resources, position 2"},
  {"t": "running", "node": NODE}, {"t": "health", "s": STATUS} (GET /health on the node the job runs on),
  {"t": "hb"}, and {"t": "exit", "code": N, "state": "TIMEOUT", "reason": ..., "exit_code": "0:15"} at the end.
stop: scancel, then wait until the controller says the job has ended.
state: the job's state now (for tail and status).
"""

import fcntl
import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request

MAX_LINE = 4096
#: squeue(1) JOB STATE CODES of a job that has not ended (its resources are or will be held).
LIVE_STATES = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
               "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD")
SQUEUE_FORMAT = "%i|%j|%T|%r|%N|%P|%k"
COMMENT_PREFIX = "deploybot:"
#: The name=value pairs of `scontrol show job --oneliner` that are read (values here never contain spaces).
SCONTROL_KEYS = ("JobState", "Reason", "ExitCode", "NodeList", "BatchHost", "Partition")


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def run(argv, timeout=30):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    return done.returncode, done.stdout, done.stderr.strip()


def squeue_rows(extra):
    """squeue's rows as dicts (every state the controller still holds: `-t all`)."""
    code, out, err = run(["squeue", "--noheader", "-t", "all", "--format", SQUEUE_FORMAT] + extra)
    if code != 0:
        if "Invalid job id" in err:
            return []
        raise RuntimeError("squeue exited %d: %s" % (code, err[:300]))
    rows = []
    for line in out.splitlines():
        parts = line.split("|", 6)
        if len(parts) == 7:
            rows.append(dict(zip(("job_id", "name", "state", "reason", "nodes", "partition", "comment"), parts)))
    return rows


def deployment_of(row):
    comment = row.get("comment") or ""
    return comment[len(COMMENT_PREFIX):] if comment.startswith(COMMENT_PREFIX) else None


def scontrol_job(job_id):
    code, out, _ = run(["scontrol", "show", "job", "--oneliner", job_id])
    if code != 0:
        return None
    found = dict(re.findall(r"(?:^|\s)(%s)=(\S*)" % "|".join(SCONTROL_KEYS), out))
    return found or None


def sacct_job(job_id):
    """The final state from accounting (a job the controller has forgotten); None where there is no accounting."""
    code, out, _ = run(["sacct", "-j", job_id, "-X", "--parsable2", "--noheader",
                        "--format", "JobID,State,ExitCode,NodeList,Reason"])
    if code != 0:
        return None
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) >= 4 and parts[0] == job_id:
            # sacct writes "CANCELLED by 0": the state is the first word
            return {"JobState": parts[1].split()[0], "ExitCode": parts[2], "NodeList": parts[3],
                    "Reason": parts[4] if len(parts) > 4 else ""}
    return None


def job_state(job_id):
    """{"state", "reason", "exit_code", "node", "source"} now, or {"state": "UNKNOWN"} when no one knows it."""
    rows = [r for r in squeue_rows(["-j", job_id]) if r["job_id"] == job_id]
    detail = None
    if not rows or rows[0]["state"] not in LIVE_STATES:
        detail = scontrol_job(job_id) or sacct_job(job_id)
    if rows:
        row = rows[0]
        state = {"state": row["state"], "reason": row["reason"], "node": row["nodes"] or None,
                 "partition": row["partition"], "source": "squeue"}
    elif detail:
        state = {"state": detail.get("JobState", "UNKNOWN"), "reason": detail.get("Reason", ""),
                 "node": detail.get("NodeList") or None, "source": "sacct"}
    else:
        return {"state": "UNKNOWN", "reason": "", "node": None, "source": None}
    if detail:
        state["exit_code"] = detail.get("ExitCode")
        if detail.get("JobState"):
            state["state"] = detail["JobState"]
        if detail.get("Reason") and detail["Reason"] != "None":
            state["reason"] = detail["Reason"]
    if state.get("node") in ("(null)", "None assigned", ""):
        state["node"] = None
    return state


def queue_position(job_id, partition):
    """1-based place among the partition's pending jobs in the order the scheduler takes them (priority)."""
    code, out, _ = run(["squeue", "--noheader", "-t", "PENDING", "-p", partition, "--sort=-p,i", "--format", "%i"])
    ids = out.split() if code == 0 else []
    return ids.index(job_id) + 1 if job_id in ids else None


def node_address(node):
    code, out, _ = run(["scontrol", "show", "node", "--oneliner", node])
    match = re.search(r"(?:^|\s)NodeAddr=(\S+)", out) if code == 0 else None
    return match.group(1) if match else node


# ------------------------------------------------------------------------------------------ launch


def job_script(args):
    """The batch script: #SBATCH options (values checked by the bot's config), the plan's environment, and the
    engine under srun. Every value that reaches the shell is quoted here, at the last moment."""
    options = ["--job-name=%s" % args["key"], "--output=%s" % args["log_path"], "--open-mode=append",
               "--nodes=1", "--ntasks=1", "--gres=%s" % args["gres"],
               "--comment=%s%s" % (COMMENT_PREFIX, args["deployment_id"])]
    for flag in ("partition", "account", "qos", "time", "mem"):
        if args.get(flag):
            options.append("--%s=%s" % (flag, args[flag]))
    lines = ["#!/bin/sh"] + ["#SBATCH %s" % option for option in options]
    lines.append("# deploybot deployment %s (plan %s); Slurm sets CUDA_VISIBLE_DEVICES from the GRES it gives"
                 % (args["deployment_id"], args.get("plan_hash")))
    for name, value in sorted(args.get("env", {}).items()):
        lines.append("export %s=%s" % (name, shlex.quote(value)))
    argv = [os.path.expanduser(a) if a.startswith("~/") else a for a in args["argv"]]
    lines.append("exec srun --ntasks=1 %s" % " ".join(shlex.quote(a) for a in argv))
    return "\n".join(lines) + "\n"


def launch(args):
    log_dir = os.path.expanduser(args["log_dir"])
    os.makedirs(log_dir, exist_ok=True)
    key = args["key"]
    args["log_path"] = os.path.join(log_dir, key + ".log")
    with open(os.path.join(log_dir, ".deploybot-slurm.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = squeue_rows(["--name", key])
        for row in rows:
            if deployment_of(row) == args["deployment_id"]:
                return {"job_id": row["job_id"], "node": row["nodes"] or None, "log_path": args["log_path"],
                        "already_launched": True, "already_running": row["state"] in LIVE_STATES}
        for row in rows:
            if row["state"] in LIVE_STATES:
                return {"error": "busy", "message": "%s is already job %s (%s, deployment %s)" % (
                    key, row["job_id"], row["state"], deployment_of(row) or "not deploybot's")}
        script_path = os.path.join(log_dir, key + ".sbatch")
        with open(script_path, "w") as handle:
            handle.write(job_script(args))
        try:
            offset = os.path.getsize(args["log_path"])
        except OSError:
            offset = 0
        code, out, err = run(["sbatch", "--parsable", script_path], timeout=60)
        if code != 0:
            return {"error": "sbatch", "message": "sbatch refused the job: %s" % (err or out)[:500]}
        job_id = out.strip().split(";")[0]  # --parsable: "jobid[;cluster]"
        return {"job_id": job_id, "node": None, "log_path": args["log_path"], "log_offset": offset,
                "already_launched": False, "already_running": True}


# ------------------------------------------------------------------------------------------ watch


def health(address, port, path):
    try:
        with urllib.request.urlopen("http://%s:%d%s" % (address, port, path), timeout=1.5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except Exception:  # noqa: BLE001 - refused, reset, timeout: no answer
        return 0


class LogTail:
    """New complete lines of a file from a byte offset (like tail -F; the file is on the shared storage)."""

    def __init__(self, path, offset):
        self.path, self.offset, self.pending = path, offset, b""

    def read(self, final=False):
        try:
            with open(self.path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size < self.offset:
                    self.offset, self.pending = 0, b""
                handle.seek(self.offset + len(self.pending))
                chunk = handle.read(1 << 20)
        except OSError:
            chunk = b""
        lines = (self.pending + chunk).split(b"\n")
        self.pending = lines.pop()
        if final or len(self.pending) > MAX_LINE * 4:
            if self.pending:
                lines.append(self.pending)
                self.offset -= 1  # the last piece has no newline to count
            self.pending = b""
        for raw in lines:
            self.offset += len(raw) + 1
            emit({"t": "log", "o": self.offset, "l": raw.decode("utf-8", "replace").rstrip("\r")[:MAX_LINE]})
        return bool(chunk)


def watch(args):
    job_id, port = args["job_id"], args.get("port")
    tail = LogTail(os.path.expanduser(args["log_path"]), int(args.get("offset", 0)))
    poll = float(args.get("poll_s", 1.0))
    heartbeat_every = float(args.get("heartbeat_s", 10.0))
    last_emit, next_state = time.time(), 0.0
    said_queued = said_node = last_health = address = None
    while True:
        grew = tail.read()
        now = time.time()
        if now >= next_state:
            next_state = now + poll
            try:
                state = job_state(job_id)
            except (RuntimeError, OSError, subprocess.SubprocessError):
                # slurmctld busy or restarting (squeue: "Socket timed out"): ask again at the next poll
                state = {"state": "UNANSWERED"}
            if state["state"] == "UNANSWERED":
                pass
            elif state["state"] == "PENDING":
                position = queue_position(job_id, state.get("partition") or "")
                # "None" until the scheduler's first pass over the job; then Resources, Priority, QOSMaxGRES...
                said = state["reason"] if state["reason"] not in ("None", "") else "waiting for the scheduler"
                reason = said + (", position %d" % position if position else "")
                if reason != said_queued:
                    said_queued = reason
                    emit({"t": "queued", "reason": reason})
                    last_emit = now
            elif state["state"] in LIVE_STATES and state.get("node"):
                if state["node"] != said_node:
                    said_node, address = state["node"], node_address(state["node"].split(",")[0])
                    emit({"t": "running", "node": said_node})
                if port:
                    status = health(address, int(port), args.get("health_path", "/health"))
                    if status != last_health:
                        last_health = status
                        emit({"t": "health", "s": status})
                        last_emit = now
            elif state["state"] not in LIVE_STATES:
                time.sleep(0.3)  # slurmstepd's last words reach the shared log a moment after the state changes
                tail.read(final=True)
                emit({"t": "exit", "code": exit_number(state.get("exit_code")), "state": state["state"],
                      "reason": state.get("reason"), "exit_code": state.get("exit_code"), "node": state.get("node")})
                return
        if grew:
            last_emit = now
        elif now - last_emit >= heartbeat_every:
            emit({"t": "hb"})
            last_emit = now
        if not grew:
            time.sleep(0.2)


def exit_number(exit_code):
    """Slurm's "EXIT:SIGNAL" as one number the way a shell says it: the exit status, or 128 + the signal."""
    try:
        status, signal = (int(part) for part in (exit_code or "").split(":"))
    except ValueError:
        return None
    return 128 + signal if signal else status


# ------------------------------------------------------------------------------------------ stop


def stop(args):
    job_id = args["job_id"]
    before = job_state(job_id)
    was_running = before["state"] in LIVE_STATES
    if was_running:
        code, _, err = run(["scancel", job_id])
        if code != 0:
            return {"stopped": False, "was_running": True, "message": "scancel %s: %s" % (job_id, err[:300])}
    deadline = time.time() + float(args.get("grace_s", 20)) + 30
    state = before
    while was_running and time.time() < deadline:
        state = job_state(job_id)
        if state["state"] not in LIVE_STATES:
            break
        time.sleep(0.3)
    stopped = state["state"] not in LIVE_STATES
    return {"stopped": stopped, "was_running": was_running, "state": state["state"],
            "message": None if stopped else "job %s still %s after scancel" % (job_id, state["state"])}


def main():
    args = json.loads(sys.argv[1])
    action = args.get("action")
    if action == "watch":
        watch(args)
        return
    answers = {"launch": launch, "stop": stop, "state": lambda a: job_state(a["job_id"])}
    if action not in answers:
        sys.stdout.write(json.dumps({"error": "usage", "message": "unknown action %r" % action}))
        return
    sys.stdout.write(json.dumps(answers[action](args)))


if __name__ == "__main__":
    main()
