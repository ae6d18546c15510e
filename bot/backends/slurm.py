"""The Slurm backend (`backend: {kind: slurm, partition: ..., ...}`): each deployment is a batch job on a cluster.

The host entry names the cluster's login node, reached over SSH like any host; the engine env (`python`), the
models (`models_dir`) and the logs (`log_dir`) are on the storage the login node shares with the compute nodes.

- probe: ONE round trip: `sinfo` (the partition's nodes, their GPUs by GRES, used and state) and the probe agent
  on the login node for the model folder, the models and the engines on the shared storage. A login node cannot
  see the compute nodes' GPUs, so their model and memory come from the backend's settings.
- launch: the Slurm agent (bot/agents/slurm_agent.py) looks the job name (the deployment key) up first and submits
  with sbatch only when no job of this deployment exists: a retried launch, or a bot restarted mid-launch, finds
  the first job (re-attach by job name). The handle is a `SlurmJob`.
- watch: one long stream from the agent: the job's log on the shared storage, "queued: Resources, position 3"
  while it waits, the health endpoint on the node it runs on, and the job's end with Slurm's state.
- stop: scancel, confirmed by the controller (the job has left the live states).
- tail: the end of the log plus one line with the job's final state as Slurm has it (TIMEOUT, OUT_OF_MEMORY,
  PREEMPTED...), so the diagnoser names the cause even when slurmstepd's own line is not in the tail.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import aclosing

from pydantic import ValidationError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from bot.backends.base import Exited, Launch, LaunchFailed, StopReport, WatchEvent, watch_event
from bot.backends.process import drop_partial_first_line
from bot.config import HostConfig, SlurmBackendSettings
from bot.handles import Handle, SlurmJob
from bot.models import GIB, GpuInfo, HostFacts, LaunchPlan
from bot.probe import ProbeFailed, agent_source, drafter_args, fetch_engine_help, run_agent
from bot.remote import HostUnreachable, Remote
from bot.tail import TAIL_BYTES

HEALTH_PATH = "/health"
LAUNCH_ATTEMPTS = 3
#: sinfo(1) --Format fields, each with a wide size (no truncation; padding is stripped) and "|" as suffix.
SINFO_FORMAT = ",".join(f"{field}:200|" for field in ("NodeList", "StateLong", "Gres", "GresUsed"))
SEPARATOR = "@@deploybot-slurm@@"
#: sinfo first, then the probe agent on stdin: one round trip. A constant script; every value is a positional
#: parameter ("$1"...), never part of the script text.
PROBE_SCRIPT = ('sinfo --noheader --Node --partition="$1" --Format="$2" 2>&1; echo "sinfo-exit=$?"; '
                'squeue --noheader --states=PENDING,CONFIGURING,RUNNING,COMPLETING,SUSPENDED --format="%j|%k" '
                '2>/dev/null; printf "%s\\n" "$3"; exec "$4" - "$5"')
#: The job name deploybot gives (the deployment key, "<model>-<port>") and the comment it tags its jobs with.
OUR_JOB = re.compile(r"^.+-(\d{2,5})\|deploybot:")
TAIL_SCRIPT = 'tail -c "$1" "$2"; printf "\\n%s\\n" "$3"; exec "$4" - "$5"'
GRES_GPU = re.compile(r"(?:^|,)gpu(?::([^:(),]+))?:(\d+)")
#: sinfo's node states a job can be placed on (a trailing *, ~, #, !, %, $, @, ^, - or + is a flag on the state).
USABLE_NODE_STATES = {"idle", "mixed", "allocated", "completing", "planned"}
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Slurm gives the job its GPUs and sets CUDA_VISIBLE_DEVICES itself; the plan's pick of indices does not apply.
SLURM_OWNED_ENV = {"CUDA_VISIBLE_DEVICES"}


class SlurmBackend:
    kind = "slurm"

    def __init__(self, host: str, config: HostConfig, remote: Remote) -> None:
        if not isinstance(config.backend, SlurmBackendSettings):
            raise TypeError(f"{host}: the Slurm backend needs `backend: {{kind: slurm, ...}}`")
        self.host = host
        self.config = config
        self.settings: SlurmBackendSettings = config.backend
        self.remote = remote

    # ------------------------------------------------------------------------------------------ probe

    async def probe(
        self, *, model: str | None = None, draft_model: str | None = None, drafters: bool = False
    ) -> HostFacts:
        args = {"models_dir": self.config.models_dir, "extra_models_dirs": list(self.config.extra_models_dirs),
                "model": model, "engine_help": []}
        wanted = drafter_args(self.config, model, draft_model, drafters)
        if wanted:
            args["drafters"] = wanted  # the drafter folders of a speculative plan (issue 16)
        argv = ["sh", "-c", PROBE_SCRIPT, "sh", self.settings.partition, SINFO_FORMAT, SEPARATOR,
                self.config.python, json.dumps(args)]
        result = await self.remote.run(argv, input=agent_source("probe_agent"), timeout=60)
        sinfo, _, agent = result.stdout.partition(SEPARATOR + "\n")
        if result.exit_status == 127:
            raise ProbeFailed(f"{self.host}: the engine python {self.config.python} was not found on the login node "
                              f"(check `python:` in app.yaml)")
        try:
            raw = json.loads(agent)
        except json.JSONDecodeError:
            tail = " | ".join((result.stderr or agent).strip().splitlines()[-5:])
            raise ProbeFailed(f"{self.host}: the probe agent printed no JSON (exit {result.exit_status}): "
                              f"{tail}") from None
        raw.pop("probe_seconds", None)
        sinfo, _, jobs = ("\n" + sinfo).partition("\nsinfo-exit=")
        status, _, jobs = jobs.partition("\n")
        # The ports of deploybot's live jobs (any node may get the next one): the planner picks another. What the
        # login node itself has (its GPUs if any, its processes and ports) says nothing about the nodes.
        ports = sorted({int(m.group(1)) for m in map(OUR_JOB.match, jobs.splitlines()) if m})
        raw.update(gpu_processes=[], listening_ports=ports, p2p={}, driver_version=None, cuda_version=None,
                   **self._gpus_from_sinfo(f"{sinfo}\nsinfo-exit={status}"))
        try:
            return HostFacts.model_validate({"host": self.host, **raw})
        except ValidationError as exc:
            raise ProbeFailed(f"{self.host}: the probe's answer did not validate: {exc}") from None

    def _gpus_from_sinfo(self, text: str) -> dict:
        """The GPUs of the partition's largest usable node (a job runs on one node), as GpuInfo the planner reads:
        all free, because Slurm gives a job its GPUs exclusively (a busy partition queues, it does not share)."""
        lines = text.strip().splitlines()
        status = lines.pop() if lines and lines[-1].startswith("sinfo-exit=") else "sinfo-exit=?"
        if status != "sinfo-exit=0":
            return {"gpu_source": "none", "gpus": [],
                    "gpu_error": f"sinfo failed ({status}): {' | '.join(lines[-3:])[:300]}"}
        best, states = 0, []
        for line in lines:
            fields = [part.strip() for part in line.split("|")]
            if len(fields) < 4:
                continue
            node, state, gres = fields[0], fields[1], fields[2]
            states.append(f"{node} {state}")
            if state.rstrip("*~#!%$@^-+") not in USABLE_NODE_STATES:
                continue
            best = max(best, self._gpu_count(gres))
        if not best:
            wanted = f"gpu:{self.settings.gres_type}" if self.settings.gres_type else "gpu"
            return {"gpu_source": "slurm", "gpus": [],
                    "gpu_error": f"partition {self.settings.partition} has no usable node with {wanted} GRES "
                                 f"({', '.join(states) or 'no nodes'})"}
        memory = int(self.settings.gpu_memory_gib * GIB)
        name = self.settings.gpu_name or f"{self.settings.gres_type or 'GPU'} (Slurm GRES)"
        gpus = [GpuInfo(index=i, name=name, memory_total_bytes=memory, memory_used_bytes=0,
                        memory_free_bytes=memory).model_dump() for i in range(best)]
        return {"gpu_source": "slurm", "gpus": gpus}

    def _gpu_count(self, gres: str) -> int:
        count = 0
        for gres_type, number in GRES_GPU.findall(gres):
            if self.settings.gres_type is None or gres_type == self.settings.gres_type:
                count += int(number)
        return count

    async def engine_help(self, engines: list[str]) -> dict[str, str]:
        return await fetch_engine_help(self.remote, self.config, engines)

    # ------------------------------------------------------------------------------------------ launch

    def _gres(self, plan: LaunchPlan) -> str:
        count = len(plan.gpus) or plan.tp
        return f"gpu:{self.settings.gres_type}:{count}" if self.settings.gres_type else f"gpu:{count}"

    async def launch(self, plan: LaunchPlan, deployment_id: str) -> Launch:
        env = {name: value for name, value in plan.env.items() if name not in SLURM_OWNED_ENV}
        bad = [name for name in env if not ENV_NAME.match(name)]
        if bad:
            raise LaunchFailed(f"{self.host}: environment names {bad} cannot be exported by a job script")
        args = {"action": "launch", "deployment_id": deployment_id, "plan_hash": plan.plan_hash(),
                "key": plan.deployment_key, "log_dir": self.config.log_dir, "argv": plan.argv, "env": env,
                "gres": self._gres(plan), "partition": self.settings.partition, "account": self.settings.account,
                "qos": self.settings.qos, "time": self.settings.time_limit, "mem": self.settings.memory}
        answer: dict = {}
        # Retried when the link drops: safe, the agent looks the job name up before it submits.
        async for attempt in AsyncRetrying(retry=retry_if_exception_type(HostUnreachable),
                                           stop=stop_after_attempt(LAUNCH_ATTEMPTS),
                                           wait=wait_exponential(multiplier=0.5, max=4), reraise=True):
            with attempt:
                answer = await run_agent(self.remote, self.config.python, "slurm_agent", args, timeout=90)
        if "error" in answer:
            raise LaunchFailed(f"{self.host}: {answer['message']}")
        handle = SlurmJob(job_id=answer["job_id"], job_name=plan.deployment_key, node=answer.get("node"),
                          log_path=answer["log_path"], port=plan.port)
        return Launch(handle=handle, log_offset=int(answer.get("log_offset") or 0),
                      already_launched=bool(answer.get("already_launched")),
                      already_running=bool(answer.get("already_running")))

    # ------------------------------------------------------------------------------------------ watch

    async def watch(self, handle: Handle, *, offset: int) -> AsyncIterator[WatchEvent]:
        job = _job(handle)
        args = {"action": "watch", "job_id": job.job_id, "log_path": job.log_path, "offset": offset,
                "port": job.port, "health_path": HEALTH_PATH, "poll_s": self.settings.poll_interval_s}
        command = [self.config.python, "-", json.dumps(args)]
        async with aclosing(self.remote.stream(command, input=agent_source("slurm_agent"))) as stream:
            async for raw in stream:
                event = watch_event(raw)
                if event is not None:
                    yield event
                if isinstance(event, Exited):
                    return

    # ------------------------------------------------------------------------------------------ stop, tail

    async def stop(self, handle: Handle, *, grace_s: float) -> StopReport:
        """scancel; Slurm sends TERM, then KILL after its KillWait. Confirmed when the job has left the live
        states (the controller frees its GPUs then)."""
        job = _job(handle)
        answer = await run_agent(self.remote, self.config.python, "slurm_agent",
                                 {"action": "stop", "job_id": job.job_id, "grace_s": grace_s}, timeout=grace_s + 60)
        holders = [] if answer.get("stopped") else [answer.get("message") or f"{job.label} still live"]
        return StopReport(stopped=bool(answer.get("stopped")), was_running=bool(answer.get("was_running")),
                          holders=holders)

    async def tail(self, handle: Handle, max_bytes: int = TAIL_BYTES) -> str:
        """The log's last ``max_bytes`` from a line boundary, then the job's final state in one line: one trip."""
        job = _job(handle)
        argv = ["sh", "-c", TAIL_SCRIPT, "sh", str(max_bytes + 1), job.log_path, SEPARATOR, self.config.python,
                json.dumps({"action": "state", "job_id": job.job_id})]
        result = await self.remote.run(argv, input=agent_source("slurm_agent"), timeout=60)
        window, _, state_text = result.stdout.rpartition("\n" + SEPARATOR + "\n")
        text = drop_partial_first_line(window, max_bytes)
        line = state_line(job, state_text)
        return f"{text.rstrip(chr(10))}\n{line}\n" if line else text


def state_line(job: SlurmJob, state_text: str) -> str | None:
    """"slurm: job 12 on node n1 ended TIMEOUT (TimeLimit), exit code 0:15", for a job that has ended."""
    try:
        state = json.loads(state_text)
    except json.JSONDecodeError:
        return None
    name = state.get("state") if isinstance(state, dict) else None
    if not name or name == "UNKNOWN" or name in LIVE_STATES:
        return None
    where = f" on node {state['node']}" if state.get("node") else ""
    reason = f" ({state['reason']})" if state.get("reason") and state["reason"] != "None" else ""
    code = f", exit code {state['exit_code']}" if state.get("exit_code") else ""
    return f"slurm: job {job.job_id}{where} ended {name}{reason}{code}"


#: squeue(1) JOB STATE CODES of a job that has not ended (the agent's list, for lines read here).
LIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
               "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD"}


def _job(handle: Handle) -> SlurmJob:
    if not isinstance(handle, SlurmJob):
        raise TypeError(f"the Slurm backend was given a {type(handle).__name__}, not the SlurmJob it makes")
    return handle


