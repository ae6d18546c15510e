"""A real OpenSSH server for integration tests: /usr/sbin/sshd on 127.0.0.1, a free port, throwaway keys.

    sshd = start_sshd(tmp_path / "sshd")
    ... asyncssh.connect(sshd.address, port=sshd.port, username=sshd.user,
                         client_keys=[str(sshd.identity_file)], known_hosts=str(sshd.known_hosts))
    sshd.stop()

Everything lives in `workdir`: an ed25519 host key and user key (ssh-keygen), authorized_keys, its own
sshd_config (no PAM, public keys only, StrictModes off so a tmp dir will do), the pid file, the log, and a
known_hosts file naming the host key as `[127.0.0.1]:PORT ssh-ed25519 ...` so clients can check strictly.
sshd runs in the foreground (`-D -e`) as our child process, so stopping it is stopping that child.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SSHD = Path("/usr/sbin/sshd")  # sshd must be started by absolute path (it re-executes itself)
PRIVSEP_DIR = Path("/run/sshd")  # sshd refuses to start without its privilege separation directory
READY_TIMEOUT_S = 15.0


class SshdError(RuntimeError):
    """sshd could not be started; the message includes its own log."""


def _require_openssh() -> None:
    missing = [str(p) for p in (SSHD,) if not p.exists()] + [t for t in ("ssh-keygen",) if not shutil.which(t)]
    if not missing:
        return
    message = f"OpenSSH server tools missing ({', '.join(missing)}); install with `apt-get install openssh-server`"
    if os.environ.get("CI"):
        raise SshdError(message + " -- CI must have them, the SSH integration tests depend on a real sshd")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _keygen(path: Path, comment: str) -> str:
    """A new ed25519 key pair at path / path.pub; returns the public key line without its comment."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    key_type, key_data = path.with_suffix(".pub").read_text().split()[:2]
    return f"{key_type} {key_data}"


@dataclass
class Sshd:
    workdir: Path
    port: int
    user: str
    identity_file: Path
    known_hosts: Path
    address: str = "127.0.0.1"
    config_file: Path = field(init=False)
    log_file: Path = field(init=False)
    _process: subprocess.Popen | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.config_file = self.workdir / "sshd_config"
        self.log_file = self.workdir / "sshd.log"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        if self.running:
            return
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(self.config_file)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._wait_until_accepting()

    def _wait_until_accepting(self) -> None:
        """Until the server sends its SSH banner: a bound port alone is not a server that answers."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise SshdError(f"sshd exited with {self._process and self._process.returncode}:\n{self.log()}")
            try:
                with socket.create_connection((self.address, self.port), timeout=1.0) as conn:
                    if conn.recv(64).startswith(b"SSH-2.0-"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise SshdError(f"sshd did not accept connections on {self.address}:{self.port}:\n{self.log()}")

    def stop(self) -> None:
        """Stop sshd (its listener; sessions it forked end with their connections)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def session_pids(self) -> list[int]:
        """The per-connection sshd processes this server forked (children of the listener)."""
        if not self.running:
            return []
        assert self._process is not None
        children = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == self._process.pid:
                children.append(int(entry))
        return children

    def drop(self) -> None:
        """The host drops off the network: the listener stops AND every open session is cut."""
        sessions = self.session_pids()
        self.stop()
        for pid in sessions:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def restart(self) -> None:
        """Stop and start again on the same port with the same keys (for connection-loss tests)."""
        self.stop()
        self.start()

    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def host_overrides(self) -> dict:
        """The app.yaml host fields that point a host entry at this server (see SimHost.host_config)."""
        return {
            "transport": "ssh",
            "address": self.address,
            "port": self.port,
            "user": self.user,
            "identity_file": str(self.identity_file),
            "known_hosts": str(self.known_hosts),
        }


def start_sshd(workdir: Path, *, set_env: dict[str, str] | None = None) -> Sshd:
    """Create keys and config in workdir and start sshd; it accepts connections when this returns.

    `set_env` is given to every session (sshd_config SetEnv, applied after sshd's own HOME, USER, PATH), e.g.
    {"HOME": simhost_root} so that a simulated host folder is the login's home (~/ml-env, ~/models, ~/.cache)."""
    _require_openssh()
    workdir = Path(workdir).absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    user = pwd.getpwuid(os.getuid()).pw_name
    port = _free_port()

    host_key = workdir / "ssh_host_ed25519_key"
    host_public = _keygen(host_key, "deploybot-test-host")
    identity = workdir / "id_ed25519"
    (workdir / "authorized_keys").write_text(_keygen(identity, "deploybot-test-user") + "\n")
    known_hosts = workdir / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_public}\n")

    (workdir / "sshd_config").write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {host_key}",
                f"PidFile {workdir / 'sshd.pid'}",
                f"AuthorizedKeysFile {workdir / 'authorized_keys'}",
                f"AllowUsers {user}",
                "StrictModes no",  # tmp dirs are world-writable parents; the keys are throwaway anyway
                "UsePAM no",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",  # tests run as root on CI; keys only
                "PrintMotd no",
                "MaxStartups 100:30:200",  # fleet probes and benchmarks open many connections at once
                "MaxSessions 100",
                "LogLevel INFO",
                "Subsystem sftp internal-sftp",
                *([" ".join(["SetEnv", *(f"{k}={v}" for k, v in set_env.items())])] if set_env else []),
                "",
            ]
        )
    )
    sshd = Sshd(workdir=workdir, port=port, user=user, identity_file=identity, known_hosts=known_hosts)
    sshd.start()
    return sshd
