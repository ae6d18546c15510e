"""The real-sshd harness: strict host key checking works both ways, restart keeps port and keys, and a simulated
host is usable over SSH by a non-login shell, including a detached engine launch."""

from __future__ import annotations

import asyncio
import shlex
import urllib.error
import urllib.request
from pathlib import Path

import asyncssh
import pytest

from bot.simhost import SimHost
from tests.sshd import Sshd, _keygen

WAIT_LIMIT_S = 30.0  # a guard against hanging, not a speed requirement


async def _connect(sshd: Sshd, known_hosts: Path | None = None) -> asyncssh.SSHClientConnection:
    return await asyncssh.connect(
        sshd.address,
        port=sshd.port,
        username=sshd.user,
        client_keys=[str(sshd.identity_file)],
        known_hosts=str(known_hosts or sshd.known_hosts),
        connect_timeout=10,
    )


async def test_strict_known_hosts_connection_runs_echo(sshd: Sshd) -> None:
    async with await _connect(sshd) as conn:
        result = await conn.run(shlex.join(["echo", "hello from sshd"]), check=True)
    assert result.stdout == "hello from sshd\n"
    assert result.exit_status == 0


async def test_wrong_known_hosts_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    other_key = _keygen(tmp_path / "other_host_key", "not-the-server")
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {other_key}\n")
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        await _connect(sshd, known_hosts=wrong)


async def test_unknown_user_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    _keygen(tmp_path / "stranger", "stranger")
    with pytest.raises(asyncssh.PermissionDenied):
        await asyncssh.connect(
            sshd.address,
            port=sshd.port,
            username=sshd.user,
            client_keys=[str(tmp_path / "stranger")],
            known_hosts=str(sshd.known_hosts),
            connect_timeout=10,
        )


async def test_restart_keeps_port_and_host_key(sshd: Sshd) -> None:
    port = sshd.port
    sshd.stop()
    with pytest.raises(OSError):
        await _connect(sshd)
    sshd.restart()
    assert sshd.port == port
    async with await _connect(sshd) as conn:  # the old known_hosts still verifies the server
        result = await conn.run("echo back", check=True)
    assert result.stdout == "back\n"


async def test_simhost_over_ssh_non_login_shell(sshd: Sshd, simhost: SimHost) -> None:
    query = [
        str(simhost.python),
        "-c",
        "import sglang, vllm, shutil; print(sglang.__version__, vllm.__version__, shutil.which('nvidia-smi'))",
    ]
    async with await _connect(sshd) as conn:
        versions = await conn.run(shlex.join(query), check=True)
        smi = await conn.run(
            shlex.join([str(simhost.bin_dir / "nvidia-smi"), "--query-gpu=index,name", "--format=csv,noheader"]),
            check=True,
        )
    assert versions.stdout.split() == ["0.5.10", "0.17.1", str(simhost.bin_dir / "nvidia-smi")]
    assert smi.stdout.splitlines() == ["0, NVIDIA RTX A6000", "1, NVIDIA RTX A6000"]


def _health(port: int) -> int | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


async def test_detached_launch_over_ssh_serves_and_stops(sshd: Sshd, simhost: SimHost, unused_tcp_port: int) -> None:
    """The launch shape deploybot uses: `setsid nohup ... > log 2>&1 &` in one SSH round trip, pid from `$!`."""
    log = simhost.log_dir / "sglang.log"
    argv = [
        str(simhost.python),
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(simhost.models_dir / "Llama-3.1-8B-Instruct"),
        "--port",
        str(unused_tcp_port),
    ]
    command = f"setsid nohup {shlex.join(argv)} > {shlex.quote(str(log))} 2>&1 < /dev/null & echo $!"
    async with await _connect(sshd) as conn:
        launched = await conn.run(command, check=True)
        pid = int(launched.stdout.strip())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_LIMIT_S
        while await asyncio.to_thread(_health, unused_tcp_port) != 200 and loop.time() < deadline:
            await asyncio.sleep(0.05)
        assert await asyncio.to_thread(_health, unused_tcp_port) == 200
        await conn.run(shlex.join(["kill", "-TERM", str(pid)]), check=True)
        # `kill -0` also succeeds for a zombie that init has not reaped yet; ps shows its state (Z) instead
        state_query = shlex.join(["ps", "-o", "stat=", "-p", str(pid)])
        while (await conn.run(state_query)).stdout.strip()[:1] not in ("", "Z") and loop.time() < deadline:
            await asyncio.sleep(0.05)
        state = (await conn.run(state_query)).stdout.strip()
    assert state[:1] in ("", "Z")  # exited (gone, or a zombie waiting for init)
    text = log.read_text()
    assert "The server is fired up and ready to roll!" in text
    assert f"Finished server process [{pid}]" in text
