"""The real one-node Slurm cluster the Slurm backend is tested against (tests/slurm.py): GPUs as GRES reach a job
as CUDA_VISIBLE_DEVICES, a job that wants GPUs another holds waits with the reason Resources, a job of the urgent
partition preempts one of the default partition with slurmstepd's own message, and a login node over the real sshd
reaches the controller."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncssh

from tests.slurm import SlurmCluster, slurm, slurm_cluster, slurm_login  # noqa: F401 - fixtures
from tests.sshd import Sshd

WAIT_LIMIT_S = 60.0  # a guard against hanging, not a speed requirement


def _submit(cluster: SlurmCluster, *args: str) -> str:
    return cluster.run(["sbatch", "--parsable", *args]).stdout.strip().split(";")[0]


def _state(cluster: SlurmCluster, job: str) -> tuple[str, str]:
    state, reason = cluster.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T|%r"]).stdout.strip().split("|")
    return state, reason


def _wait_state(cluster: SlurmCluster, job: str, wanted: set[str]) -> tuple[str, str]:
    deadline = time.monotonic() + WAIT_LIMIT_S
    while time.monotonic() < deadline:
        state, reason = _state(cluster, job)
        if state in wanted:
            return state, reason
        time.sleep(0.2)
    raise AssertionError(f"job {job} never reached {wanted}; last {_state(cluster, job)}\n{cluster.logs()}")


def test_gres_reaches_the_job_and_a_second_job_waits_for_resources(slurm: SlurmCluster, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    first = _submit(slurm, "--gres=gpu:2", f"--output={tmp_path / 'first.log'}",
                    "--wrap", "echo CVD=$CUDA_VISIBLE_DEVICES; srun sleep 60")
    assert _wait_state(slurm, first, {"RUNNING"}) == ("RUNNING", "None")
    second = _submit(slurm, "--gres=gpu:1", f"--output={tmp_path / 'second.log'}", "--wrap", "echo second")
    assert _wait_state(slurm, second, {"PENDING"})[0] == "PENDING"
    deadline = time.monotonic() + WAIT_LIMIT_S
    while _state(slurm, second)[1] != "Resources" and time.monotonic() < deadline:
        time.sleep(0.2)  # the reason is set by the scheduler's next pass
    assert _state(slurm, second) == ("PENDING", "Resources")
    assert (tmp_path / "first.log").read_text().splitlines()[0] == "CVD=0,1"
    gres = slurm.run(["sinfo", "-h", "-N", "-p", slurm.partition, "-O", "Gres:|,GresUsed:|"]).stdout.strip()
    assert gres == "gpu:a6000:2|gpu:a6000:2(IDX:0-1)|"

    slurm.run(["scancel", first])
    assert _wait_state(slurm, second, {"COMPLETED"})[0] == "COMPLETED"
    assert (tmp_path / "second.log").read_text() == "second\n"


def test_a_job_of_the_urgent_partition_preempts_one_of_the_default(slurm: SlurmCluster, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    victim = _submit(slurm, "--gres=gpu:2", f"--output={tmp_path / 'victim.log'}", "--wrap", "srun sleep 60")
    _wait_state(slurm, victim, {"RUNNING"})
    urgent = _submit(slurm, "-p", slurm.urgent_partition, "--gres=gpu:2", "--output=/dev/null", "--wrap", "true")
    assert _wait_state(slurm, victim, {"PREEMPTED"})[0] == "PREEMPTED"
    _wait_state(slurm, urgent, {"COMPLETED"})
    deadline = time.monotonic() + WAIT_LIMIT_S
    while "DUE TO PREEMPTION" not in (tmp_path / "victim.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    # slurmstepd's own words (src/slurmd/slurmstepd/req.c), e.g.
    # "slurmstepd-simnode: error: *** JOB 7 ON simnode CANCELLED AT 2026-12-01T22:55:38 DUE TO PREEMPTION ***"
    lines = [line for line in (tmp_path / "victim.log").read_text().splitlines() if "DUE TO PREEMPTION" in line]
    assert any(f"*** JOB {victim} ON {slurm.node} CANCELLED AT " in line for line in lines), lines


async def test_a_login_node_over_sshd_reaches_the_controller(slurm: SlurmCluster, slurm_login: Sshd) -> None:
    async with asyncssh.connect(slurm_login.address, port=slurm_login.port, username=slurm_login.user,
                                client_keys=[str(slurm_login.identity_file)],
                                known_hosts=str(slurm_login.known_hosts)) as conn:
        result = await asyncio.wait_for(conn.run("sinfo -h -o '%P %T %G'", check=True), WAIT_LIMIT_S)
    assert result.stdout.split("\n")[0] == f"{slurm.partition}* idle gpu:a6000:2"
