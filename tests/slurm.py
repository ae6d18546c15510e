"""A real one-node Slurm cluster for the tests: Debian's slurm-wlm (22.05) with munge, started by the tests.

    cluster = start_slurm_cluster(workdir, node_path=[simhost.bin_dir])
    cluster.run(["sinfo"])            # any Slurm client command, with this cluster's SLURM_CONF
    cluster.env                       # {"SLURM_CONF": ...}: give it to an sshd (SetEnv) to make a login node
    cluster.stop()

Everything lives in `workdir` (a world-traversable folder: munged refuses a socket whose directory others cannot
reach, so pytest's 0700 tmp dirs will not do):

- munged with its own key (1 KiB from os.urandom, mode 0400), its own socket, pid, log and seed files;
- slurmctld and slurmd on 127.0.0.1, each on a free port, as the current user (SlurmUser = SlurmdUser = whoever
  runs the tests), in the foreground (`-D`) as our children, with state, spool and logs in `workdir`;
- one node `simnode` with `Gres=gpu:<type>:<n>`; gres.conf has `AutoDetect=off` and `File=` lines pointing at
  symlinks to /dev/null that this module creates (slurmd insists on a character device: "is not a valid character
  or block device, fix your gres.conf"; with one, it sets CUDA_VISIBLE_DEVICES for the job as on a real GPU node);
- one partition `gpu` (default) and a second, `urgent`, of higher PriorityTier over the same node, so a job there
  preempts one in `gpu` (PreemptType=preempt/partition_prio, PreemptMode=CANCEL: slurmstepd writes its real
  "DUE TO PREEMPTION" line);
- no slurmdbd (too heavy for a test): AccountingStorageType=accounting_storage/none, so `sacct` answers "Slurm
  accounting storage is disabled"; finished jobs stay in the controller for MinJobAge (1 h) and `squeue -t all`
  / `scontrol show job` report their final state. Completions also go to jobcomp/filetxt (`cluster.jobcomp`).

slurm.conf keys are from slurm.conf(5) of 22.05 (`man slurm.conf` once installed); the CPU count is configured,
not detected (SlurmdParameters=config_overrides), so the node looks the same on any machine.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.simhost import SimHost, build_sim_host
from tests.sshd import Sshd, start_sshd

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "scancel", "sacct", "srun")
READY_TIMEOUT_S = 30.0
NODE = "simnode"
PARTITION = "gpu"
URGENT_PARTITION = "urgent"
NODE_CPUS = 8
NODE_MEMORY_MB = 64000


class SlurmError(RuntimeError):
    """The cluster could not be started; the message includes the daemons' logs."""


def _missing_tools() -> list[str]:
    return [tool for tool in (*DAEMONS, *CLIENTS, "munge") if not shutil.which(tool, path=_sbin_path())]


def _sbin_path() -> str:
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def require_slurm() -> None:
    """Skip (with the reason) when Slurm is not installed; on CI, fail: `make test` installs it."""
    missing = _missing_tools()
    if not missing:
        return
    message = (f"Slurm not installed (missing {', '.join(missing)}); `make slurm` installs it "
               "(apt-get install slurmctld slurmd slurm-client munge)")
    if os.environ.get("CI"):
        raise SlurmError(message + " -- CI must have it, the Slurm backend tests run against a real slurmctld")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class SlurmCluster:
    workdir: Path
    gpus: int
    gres_type: str
    node_path: list[str]
    node: str = NODE
    partition: str = PARTITION
    urgent_partition: str = URGENT_PARTITION
    #: The shared storage (a simulated host folder) when the session fixture made the cluster.
    storage: SimHost | None = None
    conf: Path = field(init=False)
    munge_socket: Path = field(init=False)
    jobcomp: Path = field(init=False)
    _children: dict[str, subprocess.Popen] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.conf = self.workdir / "slurm.conf"
        self.munge_socket = self.workdir / "run" / "munge.socket.2"
        self.jobcomp = self.workdir / "log" / "jobcomp.txt"

    @property
    def env(self) -> dict[str, str]:
        """What a client needs to talk to this cluster (slurm's own variable: the clients read it)."""
        return {"SLURM_CONF": str(self.conf)}

    def run(self, argv: Sequence[str], *, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster, as the test's own user."""
        return subprocess.run(list(argv), env={**os.environ, **self.env}, capture_output=True, text=True,
                              timeout=timeout, check=check)

    # ------------------------------------------------------------------------------------------ configuration

    def write_config(self, user: str, ctld_port: int, slurmd_port: int) -> None:
        w = self.workdir
        for folder in ("run", "munge", "state", "spool", "log", "dev"):
            (w / folder).mkdir(parents=True, exist_ok=True)
        (w / "munge").chmod(0o700)  # munged: the key's folder must not be readable by others
        key = w / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for index in range(self.gpus):
            device = w / "dev" / f"nvidia{index}"
            device.unlink(missing_ok=True)
            device.symlink_to("/dev/null")
        files = f"{w / 'dev'}/nvidia[0-{self.gpus - 1}]" if self.gpus > 1 else str(w / "dev" / "nvidia0")
        (w / "gres.conf").write_text(f"AutoDetect=off\nNodeName={self.node} Name=gpu Type={self.gres_type} "
                                     f"File={files}\n")
        lines = {
            "ClusterName": "deploybot-test",
            "SlurmctldHost": "localhost(127.0.0.1)",
            "SlurmctldPort": ctld_port,
            "SlurmdPort": slurmd_port,
            "SlurmUser": user,
            "SlurmdUser": user,
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": f"socket={self.munge_socket}",  # slurm.conf(5): "Used by auth/munge and cred/munge"
            "StateSaveLocation": w / "state",
            "SlurmdSpoolDir": w / "spool",
            "SlurmctldPidFile": w / "run" / "slurmctld.pid",
            "SlurmdPidFile": w / "run" / "slurmd.pid",
            "SlurmctldLogFile": w / "log" / "slurmctld.log",
            "SlurmdLogFile": w / "log" / "slurmd.log",
            "ProctrackType": "proctrack/linuxproc",  # no cgroups needed (containers, CI runners)
            "TaskPlugin": "task/none",
            "JobAcctGatherType": "jobacct_gather/none",
            "AccountingStorageType": "accounting_storage/none",
            "JobCompType": "jobcomp/filetxt",
            "JobCompLoc": self.jobcomp,
            "MpiDefault": "none",
            "MailProg": "/bin/true",
            "SchedulerType": "sched/builtin",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core",
            "GresTypes": "gpu",
            "SlurmdParameters": "config_overrides",
            "PreemptType": "preempt/partition_prio",
            "PreemptMode": "CANCEL",
            "ReturnToService": 2,
            "MinJobAge": 3600,
            "KillWait": 2,
            "InactiveLimit": 0,
            "SlurmctldTimeout": 30,
            "SlurmdTimeout": 30,
        }
        text = "".join(f"{key}={value}\n" for key, value in lines.items())
        text += (f"NodeName={self.node} NodeAddr=127.0.0.1 NodeHostname=localhost CPUs={NODE_CPUS} "
                 f"RealMemory={NODE_MEMORY_MB} Gres=gpu:{self.gres_type}:{self.gpus} State=UNKNOWN\n"
                 f"PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP "
                 "PriorityTier=1\n"
                 f"PartitionName={self.urgent_partition} Nodes={self.node} MaxTime=INFINITE State=UP "
                 "PriorityTier=10 PreemptMode=OFF\n")
        self.conf.write_text(text)

    # ------------------------------------------------------------------------------------------ daemons

    def _spawn(self, name: str, argv: list[str], extra_env: dict[str, str] | None = None) -> None:
        env = {**os.environ, **self.env, **(extra_env or {})}
        with open(self.workdir / "log" / f"{name}.out", "ab") as out:
            self._children[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                                    stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def start(self) -> None:
        w = self.workdir
        sbin = _sbin_path()
        self._spawn("munged", [shutil.which("munged", path=sbin) or "munged", "-F",
                               f"--key-file={w / 'munge' / 'munge.key'}", f"--socket={self.munge_socket}",
                               f"--pid-file={w / 'munge' / 'munged.pid'}", f"--log-file={w / 'log' / 'munged.log'}",
                               f"--seed-file={w / 'munge' / 'munged.seed'}"])
        self._wait_for(lambda: self.munge_socket.exists(), "munged to create its socket")
        self._spawn("slurmctld", [shutil.which("slurmctld", path=sbin) or "slurmctld", "-D", "-i"])
        # The node's PATH: what a job sees first (the simulated nvidia-smi of the shared simulated host).
        node_path = os.pathsep.join([*self.node_path, "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"])
        self._spawn("slurmd", [shutil.which("slurmd", path=sbin) or "slurmd", "-D", "-N", self.node],
                    {"PATH": node_path})
        self._wait_for(self._node_idle, f"node {self.node} to register idle")

    def _node_idle(self) -> bool:
        """IDLE as the controller has it (`scontrol show node`: no +COMPLETING, +DRAIN... flags)."""
        done = self.run(["scontrol", "show", "node", "--oneliner", self.node], check=False, timeout=10)
        return done.returncode == 0 and " State=IDLE " in done.stdout

    def _wait_for(self, condition, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, child in self._children.items():
                if child.poll() is not None:
                    raise SlurmError(f"{name} exited {child.returncode} while waiting for {what}:\n{self.logs()}")
            if condition():
                return
            time.sleep(0.1)
        raise SlurmError(f"timed out waiting for {what}:\n{self.logs()}")

    def logs(self) -> str:
        parts = []
        for path in sorted((self.workdir / "log").glob("*")):
            if path.is_file() and path != self.jobcomp:
                lines = path.read_text(errors="replace").splitlines()[-30:]
                parts.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    # ------------------------------------------------------------------------------------------ jobs

    def job_ids(self, *, states: str = "PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING") -> list[str]:
        done = self.run(["squeue", "-h", "-t", states, "-o", "%i"], check=False)
        return done.stdout.split()

    def cancel_all(self, timeout: float = 30) -> None:
        """Cancel every job and wait until the node is idle again (between tests: each starts on a free node)."""
        user = pwd.getpwuid(os.getuid()).pw_name
        self.run(["scancel", "--full", "-u", user], check=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.job_ids() and self._node_idle():
                return
            time.sleep(0.2)
        node = self.run(["scontrol", "show", "node", "--oneliner", self.node], check=False).stdout.strip()
        raise SlurmError(f"jobs still there after scancel, or the node not idle: {self.job_ids()}\n{node}\n"
                         f"{self.logs()}")

    def stop(self) -> None:
        """Cancel what runs, then stop slurmd, slurmctld and munged (in that order: each needs the next)."""
        if "slurmctld" in self._children and self._children["slurmctld"].poll() is None:
            with contextlib.suppress(Exception):
                self.cancel_all(timeout=15)
        for name in ("slurmd", "slurmctld", "munged"):
            child = self._children.pop(name, None)
            if child is None or child.poll() is not None:
                continue
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait(timeout=5)


def start_slurm_cluster(workdir: Path, *, gpus: int = 2, gres_type: str = "a6000",
                        node_path: Sequence[str | Path] = ()) -> SlurmCluster:
    """Write the configuration in workdir and start munged, slurmctld and slurmd; the node is idle on return."""
    require_slurm()
    workdir = Path(workdir).absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o755)
    cluster = SlurmCluster(workdir=workdir, gpus=gpus, gres_type=gres_type, node_path=[str(p) for p in node_path])
    cluster.write_config(pwd.getpwuid(os.getuid()).pw_name, _free_port(), _free_port())
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """One cluster for the whole session (starting one takes about a second); each test gets it idle (`slurm`).

    Its shared storage is a simulated host folder (`cluster.storage`: the engine env, the models, the logs), the
    way a cluster's login node and compute nodes share one file system; its bin (the simulated nvidia-smi) is first
    on the node's PATH."""
    require_slurm()
    workdir = Path(tempfile.mkdtemp(prefix="deploybot-slurm-"))
    workdir.chmod(0o755)  # munged: every folder above its socket must be traversable by all
    storage = build_sim_host(workdir / "shared", ready_after_s=0.5)
    cluster = start_slurm_cluster(workdir / "cluster", node_path=[storage.bin_dir])
    cluster.storage = storage
    try:
        yield cluster
    finally:
        cluster.stop()
        storage.terminate_processes()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The session's cluster with no job on it, and none left behind by this test; the storage's engines play
    "healthy" unless the test says otherwise."""
    slurm_cluster.cancel_all()
    assert slurm_cluster.storage is not None
    slurm_cluster.storage.set_scenario("healthy", ready_after_s=0.5, periodic_interval_s=0.5)
    try:
        yield slurm_cluster
    finally:
        slurm_cluster.cancel_all()
        slurm_cluster.storage.terminate_processes()


@pytest.fixture
def slurm_login(slurm: SlurmCluster, tmp_path: Path) -> Iterator[Sshd]:
    """A login node: a real sshd on loopback whose sessions talk to the cluster (SLURM_CONF) and whose home is the
    shared storage (~/ml-env, ~/models, ~/deploybot-logs), with the Slurm client commands on its PATH."""
    assert slurm.storage is not None
    server = start_sshd(tmp_path / "login", set_env={**slurm.env, "HOME": str(slurm.storage.root)})
    try:
        yield server
    finally:
        server.stop()
