"""The local transport (a bot on the GPU box itself, the demo): a command's output, and a command ended whole when
it times out or its caller is cancelled (a shutdown during a discovery probe), grandchildren included."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bot.remote import LocalRemote, RemoteError
from tests.procs import pid_alive, wait_until

# A command that starts a grandchild (as an agent starts nvidia-smi or an engine's Python) and waits on it.
_SPAWNS = "sleep 300 & echo $! > {pidfile}; wait"


async def test_a_command_gives_its_exit_code_and_both_streams_with_every_argument_quoted() -> None:
    result = await LocalRemote("here").run(["sh", "-c", 'echo "$1"; echo err >&2; exit 3', "sh", "a b; $(x)"])
    assert (result.exit_status, result.stdout, result.stderr) == (3, "a b; $(x)\n", "err\n")


async def test_standard_input_reaches_the_command() -> None:
    result = await LocalRemote("here").run(["cat"], input="the agent's source\n")
    assert result.stdout == "the agent's source\n"


def _grandchild(pidfile: Path) -> int:
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "", what="the grandchild to start")
    return int(pidfile.read_text())


async def test_a_timed_out_command_is_ended_with_what_it_started(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    with pytest.raises(RemoteError, match="timed out after 1 s"):
        await LocalRemote("here").run(["sh", "-c", _SPAWNS.format(pidfile=pidfile)], timeout=1)
    grandchild = _grandchild(pidfile)
    wait_until(lambda: not pid_alive(grandchild), what="the grandchild to be killed")


async def test_a_cancelled_command_is_ended_with_what_it_started(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    running = asyncio.ensure_future(LocalRemote("here").run(["sh", "-c", _SPAWNS.format(pidfile=pidfile)]))
    grandchild = await asyncio.to_thread(_grandchild, pidfile)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    wait_until(lambda: not pid_alive(grandchild), what="the grandchild to be killed")
    assert os.getpgid(os.getpid()) != grandchild  # (it ran in a group of its own, so ours was not signalled)


async def test_a_stream_gives_its_lines_and_reads_its_input() -> None:
    stream = LocalRemote("here").stream(["sh", "-c", "cat; echo last"], input="one\ntwo\n")
    assert [line async for line in stream] == ["one", "two", "last"]


async def test_a_stream_its_reader_leaves_is_ended_with_what_it_started(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; echo started; wait"]
    stream = LocalRemote("here").stream(command)
    assert await stream.__anext__() == "started"
    await stream.aclose()  # (a follower that reached ready)
    # (killed by then; its exit is the kernel's to finish, which a loaded machine takes a moment for)
    grandchild = _grandchild(pidfile)
    wait_until(lambda: not pid_alive(grandchild), what="the grandchild to be killed", timeout=10)


async def test_a_stream_cancelled_as_it_starts_ends_at_once_with_what_it_started(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = ["sh", "-c", _SPAWNS.format(pidfile=pidfile)]

    async def follow() -> list[str]:
        return [line async for line in LocalRemote("here").stream(command)]

    for ticks in range(4):  # cancelled at each of the first steps of its start
        pidfile.unlink(missing_ok=True)
        following = asyncio.ensure_future(follow())
        for _ in range(ticks):
            await asyncio.sleep(0)
        following.cancel()
        with pytest.raises(asyncio.CancelledError):
            await following
        if pidfile.exists() and pidfile.read_text().strip():
            wait_until(lambda: not pid_alive(int(pidfile.read_text())), what="the grandchild to be killed")
