"""The Slurm backend (bot/backends/slurm.py) against a REAL slurmctld and slurmd (tests/slurm.py), driven through the
whole pipeline over a real sshd login node: submitted with sbatch, queued while another job holds the GPUs
("queued: Resources, position 1"), running, ready on the node's /health, stopped with scancel; a job Slurm ends at
its time limit is diagnosed as such; a restarted bot re-attaches by job name; a retried launch submits once."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.backends.registry import BackendPool
from bot.config import ConfigError, Secrets, parse_config
from bot.events import Diagnosed, Info, Launched, LogExcerpt, Probed, RecordingThread
from bot.handles import SlurmJob
from bot.models import Deployment, DeployRequest, LaunchPlan
from bot.pipeline import Pipeline, Requester
from bot.remote import RemotePool
from bot.store import Store
from planners.plan import make_plan
from tests.ports import port_range
from tests.slurm import SlurmCluster, slurm, slurm_cluster, slurm_login  # noqa: F401 - fixtures
from tests.sshd import Sshd

MODEL = "Qwen3.6-27B"
WAIT_LIMIT_S = 120.0  # a guard against hanging, not a speed requirement


def slurm_config(cluster: SlurmCluster, login: Sshd, **backend: object) -> dict:
    assert cluster.storage is not None
    host = {**cluster.storage.host_config(), **login.host_overrides(), "gpus": "2x NVIDIA RTX A6000",
            "backend": {"kind": "slurm", "partition": cluster.partition, "gres_type": cluster.gres_type,
                        "gpu_name": "NVIDIA RTX A6000", "gpu_memory_gib": 47.99, "poll_interval_s": 0.3, **backend}}
    # Ports of this run's own (tests/ports.py): the cluster's node is this machine, where other tests' simulated
    # engines run too.
    return {"hosts": {"hpc": host},
            "policy": {"approvers": ["UAPPROVER"], "min_margin_gib": 0.5, "port_range": port_range()},
            "slack": {"excerpt_interval_s": 0.2, "excerpt_max_lines": 8}}


def squeue(cluster: SlurmCluster, *args: str) -> list[list[str]]:
    out = cluster.run(["squeue", "--noheader", "-t", "all", "--format", "%i|%j|%T|%r", *args]).stdout
    return [line.split("|") for line in out.splitlines()]


def submitted(cluster: SlurmCluster, name: str, deployment_id: str) -> list[str]:
    """The jobs of one deployment under its name, in any state (its id is in the job's comment)."""
    out = cluster.run(["squeue", "--noheader", "-t", "all", "--name", name, "--format", "%i|%k"]).stdout
    return [job for job, comment in (line.split("|") for line in out.splitlines())
            if comment == f"deploybot:{deployment_id}"]


def hold_gpus(cluster: SlurmCluster) -> str:
    """Someone else's job on both GPUs (a shared cluster): ours has to wait for it."""
    job = cluster.run(["sbatch", "--parsable", "--job-name=someone-else", f"--gres=gpu:{cluster.gpus}",
                       "--output=/dev/null", "--wrap", "srun sleep 300"]).stdout.strip()
    deadline = time.monotonic() + WAIT_LIMIT_S
    while squeue(cluster, "-j", job)[0][2] != "RUNNING":
        assert time.monotonic() < deadline, squeue(cluster)
        time.sleep(0.2)
    return job


def story(thread: RecordingThread) -> list[object]:
    """What the thread was told, for a failure's message."""
    return [getattr(e, "message", None) or getattr(e, "tail", None) or getattr(e, "diagnosis", None) or e.kind
            for e in thread.events]


async def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_queued_while_the_gres_is_taken_then_ready_then_scancelled(slurm, slurm_login, tmp_path):
    holder = hold_gpus(slurm)
    config = parse_config(slurm_config(slurm, slurm_login))
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    thread = RecordingThread()
    try:
        task = asyncio.create_task(pipeline.handle_text(f"start {MODEL} on hpc", thread, Requester(user="U1")))
        await wait_for(lambda: any(isinstance(e, Info) and e.message.startswith("queued: Resources")
                                   for e in thread.events) or task.done(), "the queued state")
        facts = thread.of(Probed)[0].facts
        assert facts.gpu_source == "slurm" and [g.name for g in facts.gpus] == ["NVIDIA RTX A6000"] * 2
        assert facts.model is not None and facts.model.exists  # the model folder on the shared storage
        launched = thread.of(Launched)[0]
        job = launched.handle
        assert isinstance(job, SlurmJob) and job.label == f"job {job.job_id}"
        queued = [e.message for e in thread.events if isinstance(e, Info) and e.message.startswith("queued:")]
        assert "queued: Resources, position 1" in queued, queued
        [[_, name, state, reason]] = squeue(slurm, "-j", job.job_id)
        assert (name, state, reason) == (f"{MODEL}-{job.port}", "PENDING", "Resources")

        slurm.run(["scancel", holder])  # the other job ends: ours gets the GPUs
        outcome = await asyncio.wait_for(task, WAIT_LIMIT_S)
        assert outcome.state == "ready", story(thread)
        assert squeue(slurm, "-j", job.job_id)[0][2] == "RUNNING"
        lines = [line for e in thread.of(LogExcerpt) for line in e.lines]
        assert any("server_args" in line or "Load weight" in line for line in lines)  # the job's log, followed
        script = (slurm.storage.log_dir / f"{MODEL}-{job.port}.sbatch").read_text()
        assert "#SBATCH --gres=gpu:a6000:2\n" in script and f"#SBATCH --job-name={MODEL}-{job.port}\n" in script
        assert "\nexec srun --ntasks=1 " in script and "export CUDA_VISIBLE_DEVICES" not in script

        stop = await pipeline.handle_text(f"stop {MODEL} on hpc", RecordingThread(), Requester(user="U1"))
        assert stop.state == "stopped" and "stopped cleanly" in stop.message, stop.message
        assert squeue(slurm, "-j", job.job_id)[0][2] == "CANCELLED"
        assert (await store.get_deployment(outcome.deployment.id)).state == "stopped"
    finally:
        await pipeline.close()
        store.close()


async def test_a_job_past_its_time_limit_is_diagnosed_as_such(slurm, slurm_login, tmp_path):
    # Slurm's time resolution is one minute, and slurmctld checks limits every 30 s: this test takes 60-90 s.
    config = parse_config(slurm_config(slurm, slurm_login, time_limit="1"))
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    thread = RecordingThread()
    try:
        outcome = await asyncio.wait_for(
            pipeline.handle_text(f"start {MODEL} on hpc", thread, Requester(user="U1"), until_ready=False), 150)
        assert outcome.state == "crashed", story(thread)
        diagnosis = thread.of(Diagnosed)[0].diagnosis
        assert diagnosis.category == "time_limit", diagnosis
        assert "DUE TO TIME LIMIT" in diagnosis.evidence[0].text  # slurmstepd's own line, from the job's log
        assert any("time_limit" in step for step in diagnosis.next_steps)
        job = thread.of(Launched)[0].handle
        assert squeue(slurm, "-j", job.job_id)[0][2:] == ["TIMEOUT", "TimeLimit"]
    finally:
        await pipeline.close()
        store.close()


async def test_a_restarted_bot_reattaches_by_job_name_and_a_retried_launch_submits_once(slurm, slurm_login, tmp_path):
    config = parse_config(slurm_config(slurm, slurm_login))
    remotes = RemotePool(config.hosts)
    backend = BackendPool(config.hosts, remotes).get("hpc")
    facts = await backend.probe(model=MODEL)
    plan = make_plan(DeployRequest(action="start", model=MODEL, host="hpc"), facts, config.hosts["hpc"], config.policy)
    assert isinstance(plan, LaunchPlan), plan
    # Two bots (or a retry racing the first attempt) launch the same deployment at once: the agent's lock on the
    # shared log folder lets one submit and the other find its job.
    both = await asyncio.gather(backend.launch(plan, "dep0001"), backend.launch(plan, "dep0001"))
    first = next(launch for launch in both if not launch.already_launched)
    assert sorted(launch.already_launched for launch in both) == [False, True]
    again = await backend.launch(plan, "dep0001")  # a retry: the job name is looked up, nothing new is submitted
    assert not first.already_launched and again.already_launched
    assert again.handle.job_id == first.handle.job_id
    assert submitted(slurm, plan.deployment_key, "dep0001") == [first.handle.job_id]
    later = await backend.probe(model=MODEL)
    assert plan.port in later.listening_ports  # deploybot's live jobs' ports: the next plan takes another
    second = make_plan(DeployRequest(action="start", model=MODEL, host="hpc"), later, config.hosts["hpc"],
                       config.policy)
    assert isinstance(second, LaunchPlan) and second.port != plan.port
    other = await asyncio.gather(backend.launch(plan, "dep0002"), return_exceptions=True)
    assert "already job " + first.handle.job_id in str(other[0])  # another deployment under a live name: busy
    await remotes.close()

    # The bot was killed between sbatch and saving the handle: the stored deployment has none. A new bot resumes
    # it and finds the job by its name (the deployment key) and the deployment id in its comment.
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    try:
        dep = Deployment(id="dep0001", host="hpc", model=MODEL, engine=plan.engine, port=plan.port, plan=plan,
                         state="launching", requested_by="U1")
        await store.save_deployment(dep)
        thread = RecordingThread()
        outcome = await asyncio.wait_for(pipeline.resume(dep, thread, until_ready=True), WAIT_LIMIT_S)
        assert outcome.state == "ready", story(thread)
        launched = thread.of(Launched)[0]
        assert launched.already_running and launched.handle.job_id == first.handle.job_id
        assert submitted(slurm, plan.deployment_key, "dep0001") == [first.handle.job_id]
    finally:
        await pipeline.close()
        store.close()


@pytest.mark.parametrize(("key", "value"), [("partition", "gpu;touch /tmp/x"), ("qos", "$(id)"),
                                            ("time_limit", "1 hour"), ("memory", "64 GB"), ("gres_type", "a100 x")])
def test_a_setting_a_job_script_could_misread_is_refused_by_name(key, value):
    raw = {"hosts": {"hpc": {"models_dir": "/shared/models", "transport": "local",
                             "backend": {"kind": "slurm", "partition": "gpu", "gpu_memory_gib": 80, key: value}}}}
    with pytest.raises(ConfigError, match=f"hosts.hpc.backend.slurm.{key}"):
        parse_config(raw)


def test_a_slurm_host_must_say_its_gpus_memory():
    raw = {"hosts": {"hpc": {"models_dir": "/shared/models", "transport": "local",
                             "backend": {"kind": "slurm", "partition": "gpu"}}}}
    with pytest.raises(ConfigError, match="gpu_memory_gib"):
        parse_config(raw)
