"""Shared fixtures.

- `sshd`: a real OpenSSH server on 127.0.0.1 with throwaway keys (tests/sshd.py); one per test, stopped after it.
  Connect with `sshd.host_overrides()` (address, port, user, identity_file, known_hosts); `sshd.restart()` keeps
  port and keys, for connection-loss tests.
- `simhost`: a simulated GPU host (bot.simhost) in tmp_path: 2x RTX A6000, the default models and engines,
  scenario "healthy", ready ~0.5 s after start and a periodic log line every 0.5 s (short, to keep tests quick).
  Every process started through its interpreter is terminated after the test, even one a test forgot.

Add other fixtures below these; keep each documented here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.simhost import SimHost, build_sim_host
from tests.sshd import Sshd, start_sshd


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    server = start_sshd(tmp_path / "sshd")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def simhost(tmp_path: Path) -> Iterator[SimHost]:
    host = build_sim_host(tmp_path / "simhost", ready_after_s=0.5)
    host.set_scenario("healthy", periodic_interval_s=0.5)
    try:
        yield host
    finally:
        host.terminate_processes()
