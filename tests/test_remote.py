"""SshRemote against dead and live endpoints: shared connect attempts, clear errors, and the user default."""

from __future__ import annotations

import asyncio
import socket

import pytest

from bot.config import HostConfig
from bot.remote import HostUnreachable, SshRemote


def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: connecting is refused


class CountingRemote(SshRemote):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.attempts = 0

    async def _connect_once(self):
        self.attempts += 1
        return await super()._connect_once()


async def test_concurrent_commands_to_a_dead_host_share_one_retry_sequence(tmp_path):
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    config = HostConfig(address="127.0.0.1", port=refused_port(), models_dir="/m", known_hosts=str(known_hosts))
    remote = CountingRemote("dead", config, connect_attempts=3, backoff_max_s=0.2)
    results = await asyncio.gather(*(remote.run(["true"]) for _ in range(5)), return_exceptions=True)
    assert all(isinstance(r, HostUnreachable) for r in results), results
    assert "cannot reach 127.0.0.1" in str(results[0]) and "after 3 attempts" in str(results[0])
    assert remote.attempts == 3  # not 5 x 3: the callers waited on the same attempt


async def test_a_host_without_user_logs_in_as_the_local_user(sshd, tmp_path):
    overrides = {k: v for k, v in sshd.host_overrides().items() if k != "user"}
    config = HostConfig(models_dir="/m", **overrides)
    remote = SshRemote("live", config)
    try:
        result = await remote.run(["echo", "hello; $(id)"])
        assert result.exit_status == 0 and result.stdout == "hello; $(id)\n"
    finally:
        await remote.close()


async def test_the_connection_is_reused_across_commands(sshd):
    remote = SshRemote("live", HostConfig(models_dir="/m", **sshd.host_overrides()))
    try:
        for _ in range(3):
            assert (await remote.run(["true"])).exit_status == 0
        assert remote.connects == 1 and remote.round_trips == 3
    finally:
        await remote.close()


def test_an_ssh_host_without_known_hosts_is_a_config_error():
    with pytest.raises(ValueError, match="known_hosts"):
        HostConfig(models_dir="/m", transport="ssh")
