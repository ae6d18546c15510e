"""Run commands on a host: over SSH (asyncssh, one pooled connection per host) or locally.

Every command is an argv list; it becomes a shell string only here, at the last moment, through `remote_command`.
Both transports go through `sh -c`-like semantics (sshd runs the command through the user's shell; the local
transport runs `sh -c`), so a command behaves the same on either.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import signal
import subprocess
from collections import Counter as Tally
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

import asyncssh
from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from bot.config import HostConfig, expand

log = logging.getLogger(__name__)


class RemoteError(Exception):
    """A host could not be reached or refused us; the message says what to do."""


class HostUnreachable(RemoteError):
    pass


class HostKeyRejected(RemoteError):
    pass


@dataclass(frozen=True)
class RunResult:
    exit_status: int | None
    stdout: str
    stderr: str


def remote_arg(arg: str) -> str:
    """Quote one argument for a POSIX shell; a leading `~/` stays expandable (host paths in app.yaml use it)."""
    if arg.startswith("~/"):
        return '"$HOME"/' + shlex.quote(arg[2:])
    return shlex.quote(arg)


def remote_command(argv: list[str]) -> str:
    """The one place an argv becomes a shell string: every value quoted exactly once."""
    if not argv:
        raise ValueError("empty command")
    return " ".join(remote_arg(a) for a in argv)


def _write_and_close(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except BrokenPipeError:
        pass  # (the command ended before it read its input: its output and exit tell why)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Remote(Protocol):
    host: str
    round_trips: int

    async def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None) -> RunResult: ...

    def stream(self, argv: list[str], *, input: str | None = None) -> AsyncGenerator[str, None]: ...

    async def close(self) -> None: ...


class LocalRemote:
    """A host that is this machine (the demo, or a bot running on the GPU box itself)."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.round_trips = 0  # commands run (run or stream): the pipeline's cost in host round trips

    async def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None) -> RunResult:
        self.round_trips += 1
        # Started here and waited for in a thread, in a process group of its own: a cancel or a timeout kills the
        # command and all it started at once, and returns at once. (asyncio's subprocess, cancelled while it still
        # connects the pipes, waits for the child to close them: a shutdown during a discovery probe waited ~10 s.)
        proc = subprocess.Popen(["sh", "-c", remote_command(argv)], start_new_session=True,
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = await asyncio.to_thread(proc.communicate, input.encode() if input is not None else None,
                                               timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            await asyncio.to_thread(proc.communicate)
            raise RemoteError(f"{self.host}: command timed out after {timeout:.0f} s") from None
        except BaseException:
            _kill_group(proc)
            raise
        return RunResult(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))

    async def stream(self, argv: list[str], *, input: str | None = None) -> AsyncGenerator[str, None]:
        self.round_trips += 1
        # Its own process group: closing the stream ends the command and everything it started (a plain kill
        # would end only `sh`, and dash does not exec its last command, so the agent would live on). Started
        # here, not by asyncio's subprocess (see run), and its output read through a pipe reader on this loop.
        proc = subprocess.Popen(["sh", "-c", remote_command(argv)], start_new_session=True,
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        transport: asyncio.BaseTransport | None = None
        try:
            transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proc.stdout)
            if input is not None:
                await asyncio.to_thread(_write_and_close, proc, input.encode())
            async for raw in reader:
                yield raw.decode(errors="replace").rstrip("\n")
        finally:
            _kill_group(proc)
            if transport is not None:
                transport.close()
            await asyncio.to_thread(proc.wait)

    async def close(self) -> None:
        return None


#: Errors worth a retry: the network or the server, not our keys or our config.
TRANSIENT_SSH_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    asyncio.TimeoutError,
    asyncssh.ConnectionLost,
    asyncssh.DisconnectError,
)


#: Errors that mean the pooled connection is gone (the next call reconnects).
LINK_ERRORS: tuple[type[BaseException], ...] = (
    asyncssh.ConnectionLost,
    asyncssh.DisconnectError,
    asyncssh.ChannelOpenError,
    OSError,
)


class SshRemote:
    """One pooled asyncssh connection per host; connect retried with exponential backoff (tenacity)."""

    def __init__(self, host: str, config: HostConfig, *, connect_attempts: int = 4, backoff_max_s: float = 8.0,
                 failures: Tally[str] | None = None) -> None:
        self.host = host
        self.config = config
        self._conn: asyncssh.SSHClientConnection | None = None
        self._connecting: asyncio.Future[asyncssh.SSHClientConnection] | None = None
        self._lock = asyncio.Lock()
        self._attempts = connect_attempts
        self._backoff_max = backoff_max_s
        self.round_trips = 0  # commands run over the pooled connection (run or stream)
        self.connects = 0  # SSH connections opened (1 unless the link dropped)
        #: Failed connect attempts by host, shared by the pool (deploybot_ssh_connect_failures_total).
        self.failures: Tally[str] = failures if failures is not None else Tally()

    async def _connect_once(self) -> asyncssh.SSHClientConnection:
        try:
            return await self._dial()
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                self.failures[self.host] += 1
            raise

    async def _dial(self) -> asyncssh.SSHClientConnection:
        cfg = self.config
        return await asyncssh.connect(
            cfg.address,
            port=cfg.port,
            username=cfg.user or (),  # () = asyncssh's default: the local user name
            client_keys=[expand(cfg.identity_file)] if cfg.identity_file else None,
            known_hosts=expand(cfg.known_hosts) if cfg.known_hosts else (),
            connect_timeout=cfg.connect_timeout_s,
            keepalive_interval=15,
            keepalive_count_max=3,
            agent_path=None,
            # Our own config decides; never pick up ~/.ssh/config of whoever runs the bot.
            config=[],
        )

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The pooled connection; callers that arrive while it is being (re)made share that one attempt, so
        N commands to a dead host fail together after one retry sequence, not one after another."""
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        async with self._lock:
            if self._connecting is None or self._connecting.done():
                self._connecting = asyncio.ensure_future(self._connect_with_retries())
            connecting = self._connecting
        try:
            self._conn = await asyncio.shield(connecting)
        finally:
            async with self._lock:
                if self._connecting is connecting and connecting.done():
                    self._connecting = None
        return self._conn

    async def _connect_with_retries(self) -> asyncssh.SSHClientConnection:
        conn: asyncssh.SSHClientConnection | None = None
        try:
            async for attempt in AsyncRetrying(
                retry=retry_if_exception_type(TRANSIENT_SSH_ERRORS),
                stop=stop_after_attempt(self._attempts),
                wait=wait_exponential(multiplier=0.25, max=self._backoff_max),
                reraise=True,
            ):
                with attempt:
                    conn = await self._connect_once()
                    self.connects += 1
        except asyncssh.HostKeyNotVerifiable as exc:
            raise HostKeyRejected(
                f"{self.host}: the host key of {self.config.address}:{self.config.port} is not the one in "
                f"{self.config.known_hosts} ({exc.reason}). Refusing to connect: if the host was reinstalled, "
                f"verify its new key out of band and update known_hosts."
            ) from None
        except asyncssh.PermissionDenied as exc:
            raise RemoteError(
                f"{self.host}: SSH login as {self.config.user} refused ({exc.reason}); check identity_file "
                f"and the host's authorized_keys"
            ) from None
        except (RetryError, *TRANSIENT_SSH_ERRORS) as exc:
            raise HostUnreachable(
                f"{self.host}: cannot reach {self.config.address}:{self.config.port} after {self._attempts} "
                f"attempts ({type(exc).__name__}: {exc}). Is the host up and sshd running?"
            ) from None
        assert conn is not None
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.abort()
        self._conn = None

    async def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None) -> RunResult:
        conn = await self.connection()
        self.round_trips += 1
        try:
            result = await conn.run(remote_command(argv), input=input, timeout=timeout, check=False)
        except asyncssh.TimeoutError:
            raise RemoteError(f"{self.host}: command timed out after {timeout:.0f} s") from None
        except LINK_ERRORS as exc:
            self._drop()
            raise HostUnreachable(f"{self.host}: connection lost ({exc})") from None
        return RunResult(result.exit_status, str(result.stdout or ""), str(result.stderr or ""))

    async def stream(self, argv: list[str], *, input: str | None = None) -> AsyncGenerator[str, None]:
        conn = await self.connection()
        self.round_trips += 1
        try:
            async with conn.create_process(remote_command(argv), stderr=asyncssh.DEVNULL) as proc:
                if input is not None:
                    proc.stdin.write(input)
                    proc.stdin.write_eof()
                async for line in proc.stdout:
                    yield line.rstrip("\n")
        except LINK_ERRORS as exc:
            self._drop()
            raise HostUnreachable(f"{self.host}: connection lost while streaming ({exc})") from None

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            await self._conn.wait_closed()
            self._conn = None


class RemotePool:
    """One Remote per host name, created on first use."""

    def __init__(self, hosts: dict[str, HostConfig]) -> None:
        self._hosts = hosts
        self._remotes: dict[str, Remote] = {}
        self.connect_failures: Tally[str] = Tally()  # kept when the remotes are closed and made again

    def host_config(self, host: str) -> HostConfig:
        """A host's app.yaml entry (a backend spanning hosts makes its members' backends from these)."""
        return self._hosts[host]

    def get(self, host: str) -> Remote:
        if host not in self._remotes:
            cfg = self._hosts[host]
            self._remotes[host] = (LocalRemote(host) if cfg.transport == "local"
                                   else SshRemote(host, cfg, failures=self.connect_failures))
        return self._remotes[host]

    async def close(self) -> None:
        for remote in self._remotes.values():
            await remote.close()
        self._remotes.clear()
