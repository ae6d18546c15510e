"""Benchmark: request to PID as a Slack user sees it, against plain asyncssh doing the same work, in one run.

From the signed `/deploy` POST leaving "Slack" to the status message update carrying the PID arriving at Slack's
Web API (a local server in this process, tests/fakeslack.py), through the real app (`SlackService`: Bolt over
HTTP, the story loop, the pipeline, SQLite) in its own process, as `deploybot serve` runs. The host: a simulated
2x RTX A6000 behind one real sshd on loopback. The floor: plain asyncssh in this process, one new connection, the
same probe agent, then the bot's own argv started by hand (`setsid nohup ... & echo $!`), clock stopped at the PID.

Measured in rounds; each round runs, in a rotating order so that a noisy moment falls on each in turn:

- `floor`: the asyncssh floor (connect, probe, launch);
- `bot_new_connection`: the bot after its SSH connection to the host was closed, so it connects as the floor does;
- `bot_pooled`: the bot on the connection it keeps open (serve's steady state: the follower keeps it).

After each bot request the server is stopped through Slack (`/deploy stop ...`) and the app drains its stories;
the floor stops its own. Only ratios within a round are compared (the 2-core machine is shared: absolute times
move with its load); printed: the median, min and max of each ratio over the rounds, and of each time.

The app process records when each step of a request ran (`--trace`, on by default: Web API calls, store calls,
SSH connect and commands, the pipeline's events as the Slack thread receives them); printed as the median
timeline of the bot's requests, offsets from the POST, so one sees what stands between the POST and the PID.

    .venv/bin/python bench/bench_slack_pid.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, figure, note, require_sshd, sim_host, sshd_servers, summary  # noqa: E402

from bench_request_to_pid import HOST, MODEL, floor_once  # noqa: E402
from bot.config import parse_config  # noqa: E402
from bot.store import Store  # noqa: E402
from tests import slack_signing  # noqa: E402
from tests.fakeslack import FakeSlack  # noqa: E402

SIGNING_SECRET = "8f14e45fceea167a5a36dedd4bea2543"
EVENTS_PATH = "/slack/events"
START = f"start {MODEL} on {HOST} with stock MTP"
STOP = f"stop {MODEL} on {HOST}"
CHANNEL = "C0BENCH"
WAIT_S = 30.0
PID_TEXT = re.compile(r"PID (\d+)")
KINDS = ("floor", "bot_new_connection", "bot_pooled")


# --------------------------------------------------------------------------------------------- the app (child)

TRACE: list[tuple[str, float, float]] = []


def _traced(label: Any, fn: Any) -> Any:
    """`fn` (a coroutine function) with each call noted in TRACE: (label, start, end), time.monotonic()."""

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return await fn(*args, **kwargs)
        finally:
            name = label(*args, **kwargs) if callable(label) else label
            TRACE.append((name, started, time.monotonic()))

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _agent_of(_remote: Any, argv: list[str], **_kwargs: Any) -> str:
    """Which agent an SSH command ran: the bot's agents take one JSON argument."""
    try:
        args = json.loads(argv[-1])
    except (ValueError, IndexError):
        return "ssh:run"
    if "help_only" in args:
        return "ssh:help"
    if "action" in args:
        return f"ssh:{args['action']}"
    return "ssh:probe" if "models_dir" in args else "ssh:run"


def install_trace() -> None:
    """Wrap the calls a request makes on its way to the PID (instrumentation of the bench's own app process)."""
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.remote import SshRemote
    from handlers.slack.deploy import DeployCommand
    from handlers.slack.thread import SlackThread

    AsyncWebClient.api_call = _traced(lambda _c, method, **_k: f"slack:{method}", AsyncWebClient.api_call)
    for name, member in list(vars(Store).items()):
        if not name.startswith("_") and asyncio.iscoroutinefunction(member):
            setattr(Store, name, _traced(f"store:{name}", member))
    SshRemote._connect_with_retries = _traced("ssh:connect", SshRemote._connect_with_retries)
    SshRemote.run = _traced(_agent_of, SshRemote.run)
    SlackThread.emit = _traced(lambda _t, event: f"emit:{event.kind}", SlackThread.emit)
    SlackThread.start = _traced("thread:start", SlackThread.start)
    DeployCommand.on_command = _traced("bolt:on_deploy", DeployCommand.on_command)
    DeployCommand._deploy = _traced("story", DeployCommand._deploy)


async def _close_connections(pipeline: Any) -> int:
    """Close every open SSH connection of the pipeline: the pool's and the ones its backends hold (a backend keeps
    the Remote it was made with). Returns how many were open."""
    remotes = {id(r): r for r in pipeline.remotes._remotes.values()}
    for backend in pipeline.backends._backends.values():
        remote = getattr(backend, "remote", None)
        if remote is not None:
            remotes[id(remote)] = remote
    open_ = [r for r in remotes.values() if getattr(r, "_conn", None) is not None]
    for remote in open_:
        await remote.close()
    return len(open_)


async def serve_child(spec: dict) -> None:
    """The real app on 127.0.0.1 (HTTP mode), told what to do on stdin, one command a line, answered on stdout."""
    from bot.config import Secrets
    from handlers.slack.serve import SlackService, freeze_startup_objects

    if spec["trace"]:
        install_trace()
    store = Store(spec["db"])
    service = SlackService(parse_config(spec["config"], "bench config"), store, Secrets(), port=0, host="127.0.0.1")
    await service.start()
    if service.discovering is not None:
        await service.discovering  # the start-up probe of the host, before any request is timed
    freeze_startup_objects()  # as `deploybot serve` does after the start
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print(f"listening {service.port}", flush=True)
    try:
        while line := (await reader.readline()).decode().strip():
            if line == "drop":  # close the SSH connections (on the loop they belong to); the next use reconnects
                answer: Any = await service.surface.stories.run(_close_connections(service.pipeline))
            elif line == "idle":  # every story ended (the stopped server's follower included)
                deadline = time.monotonic() + WAIT_S
                while service.surface.tasks and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                answer = "ok" if not service.surface.tasks else f"busy {len(service.surface.tasks)}"
            elif line == "trace":
                answer = list(TRACE)
                TRACE.clear()
            else:
                break
            print(json.dumps(answer), flush=True)
    finally:
        await service.stop()
        store.close()


# --------------------------------------------------------------------------------------------- Slack's side


class App:
    """The app process: started, sent commands, stopped (killed if it hangs)."""

    def __init__(self, spec_file: Path, env: dict[str, str]) -> None:
        self.spec_file, self.env = spec_file, env
        self.process: asyncio.subprocess.Process | None = None
        self.port = 0

    async def __aenter__(self) -> App:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__).resolve()), "--serve", str(self.spec_file),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=self.env, cwd=REPO)
        line = await asyncio.wait_for(self._stdout().readline(), WAIT_S)
        if not line.startswith(b"listening "):
            raise RuntimeError(f"the app did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def _stdout(self) -> asyncio.StreamReader:
        assert self.process is not None and self.process.stdout is not None
        return self.process.stdout

    async def ask(self, command: str) -> Any:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(command.encode() + b"\n")
        await self.process.stdin.drain()
        return json.loads(await asyncio.wait_for(self._stdout().readline(), WAIT_S + 10))

    async def __aexit__(self, *exc_info: object) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        assert self.process.stdin is not None
        self.process.stdin.close()  # end of commands: the app stops
        try:
            await asyncio.wait_for(self.process.wait(), 30)
        except asyncio.TimeoutError:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()


@dataclass
class BotRun:
    post_at: float
    ack_s: float
    pid_s: float
    pid: int
    trace: list[tuple[str, float, float]]


class SlackUser:
    """Sends signed /deploy requests and reads the answers off the local Web API server."""

    def __init__(self, slack: FakeSlack, session: aiohttp.ClientSession, url: str) -> None:
        self.slack, self.session, self.url = slack, session, url

    async def post(self, text: str) -> tuple[float, float]:
        request = slack_signing.slash_command(SIGNING_SECRET, text=text, channel_id=CHANNEL,
                                              response_url=self.slack.response_url())
        started = time.monotonic()
        async with self.session.post(self.url, data=request.body, headers=request.headers) as response:
            await response.read()
            if response.status != 200:
                raise RuntimeError(f"/deploy answered HTTP {response.status}")
        return started, time.monotonic() - started

    def _thread_of(self, since: int) -> str | None:
        """The thread the bot opened for the request: the first parent message posted after call `since`."""
        for call in self.slack.calls()[since:]:
            if call.method == "chat.postMessage" and call.ok and not call.args.get("thread_ts"):
                return str(call.response["ts"])
        return None

    def _first(self, since: int, thread: str, pattern: re.Pattern[str] | str) -> Any:
        """The first call after `since` in `thread` whose text or blocks match (its match, and its arrival)."""
        for call in self.slack.calls()[since:]:
            if not call.ok or call.method not in ("chat.update", "chat.postMessage"):
                continue
            message = call.response.get("message", {})
            if message.get("thread_ts") != thread:
                continue
            body = json.dumps(call.args.get("blocks") or []) + (call.args.get("text") or "")
            found = re.search(pattern, body)
            if found:
                return found, call.at
        return None

    async def deploy_to_pid(self) -> tuple[float, float, float, int, str, int]:
        since = len(self.slack.calls())
        post_at, ack_s = await self.post(START)
        await self.slack.wait_for(lambda: (t := self._thread_of(since)) is not None
                                  and self._first(since, t, PID_TEXT) is not None, WAIT_S)
        thread = self._thread_of(since)
        assert thread is not None
        found, at = self._first(since, thread, PID_TEXT)
        return post_at, ack_s, at - post_at, int(found.group(1)), thread, since

    async def wait_ready(self, thread: str, since: int) -> None:
        try:
            await self.slack.wait_for(lambda: self._first(since, thread, "✅") is not None, WAIT_S)
        except asyncio.TimeoutError:
            told = [m.text for m in self.slack.replies(CHANNEL, thread)]
            raise RuntimeError(f"the server did not get ready; the thread says: {told}") from None

    async def stop(self) -> None:
        since = len(self.slack.calls())
        await self.post(STOP)
        await self.slack.wait_for(lambda: (t := self._thread_of(since)) is not None
                                  and self._first(since, t, "stopped cleanly|killed after") is not None, WAIT_S)


async def bot_round(user: SlackUser, app: App, *, new_connection: bool) -> BotRun:
    if new_connection and await app.ask("drop") < 1:
        raise RuntimeError("no SSH connection was open to close: the bot's would not be a new one")
    await app.ask("trace")  # forget what ran before
    post_at, ack_s, pid_s, pid, thread, since = await user.deploy_to_pid()
    trace = await app.ask("trace")
    await user.wait_ready(thread, since)
    await user.stop()
    if (idle := await app.ask("idle")) != "ok":
        raise RuntimeError(f"the app did not drain: {idle}")
    return BotRun(post_at, ack_s, pid_s, pid, [tuple(t) for t in trace])


def app_config(sim_entry: dict, sshd_entry: dict, port_base: int) -> dict:
    return {
        "hosts": {HOST: {**sim_entry, **sshd_entry, "transport": "ssh"}},
        # A port range of the bench's own: the test suites' servers listen on the default 30000-30999.
        "policy": {"approvers": ["UAPPROVER"], "min_margin_gib": 0.5, "stop_grace_s": 5,
                   "port_range": [port_base, port_base + 99], "engine_watch_interval_s": 0},
        "slack": {"excerpt_interval_s": 0.5, "excerpt_max_lines": 8},
        "discovery": {"refresh_interval_s": 0},
    }


async def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    port_base = random.randrange(20000, 29900, 100)
    with sim_host(work / "host", gpus="2xA6000", ready_after_s=0.3) as sim, \
            sshd_servers(work / "sshd", 1) as servers:
        sim.set_scenario("healthy", periodic_interval_s=0.5)
        config = app_config(sim.host_config(), servers[0].host_overrides(), port_base)
        host_cfg = parse_config(config, "bench config").hosts[HOST]
        db = work / "state.db"
        spec = work / "app.json"
        spec.write_text(json.dumps({"config": config, "db": str(db), "trace": not args.no_trace}))
        async with FakeSlack() as slack:
            env = {**os.environ, "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                   "SLACK_API_URL": slack.base_url, "PYTHONUNBUFFERED": "1"}
            env.pop("SLACK_APP_TOKEN", None)
            async with App(spec, env) as app, aiohttp.ClientSession() as session:
                user = SlackUser(slack, session, f"http://127.0.0.1:{app.port}{EVENTS_PATH}")
                # Warm-up, not counted: the first request also fetches the engine's --help (cached per version),
                # and Bolt's first request checks the token (auth.test).
                first = await bot_round(user, app, new_connection=True)
                reader = Store(db)
                try:
                    plan = (await reader.deployments(host=HOST))[-1].plan
                finally:
                    reader.close()
                await floor_once(host_cfg, plan)
                runs: dict[str, list[Any]] = defaultdict(list)
                floor_parts: dict[str, list[float]] = defaultdict(list)
                for index in range(args.rounds):
                    order = KINDS[index % 3:] + KINDS[:index % 3]
                    for kind in order:
                        if kind == "floor":
                            parts: dict[str, float] = {}
                            runs[kind].append(await floor_once(host_cfg, plan, parts))
                            for step, seconds in parts.items():
                                floor_parts[step].append(seconds)
                        else:
                            runs[kind].append(await bot_round(user, app, new_connection=kind == "bot_new_connection"))
    return {"runs": runs, "first": first, "floor_parts": floor_parts}


# --------------------------------------------------------------------------------------------- report


def spread(name: str, values: list[float], unit: str, scale: float = 1.0, what: str = "") -> None:
    med = statistics.median(values)
    figure(name, med * scale, f"{unit} (median of {len(values)}; min {min(values) * scale:.3f}, "
                              f"max {max(values) * scale:.3f}){' ' + what if what else ''}")


def timeline(bots: list[BotRun]) -> list[tuple[str, float, float, int]]:
    """Each step of the requests, by its name and how many of that name came before it: the median start (ms after
    the POST), median duration and how many requests had it; only what started before the PID reached Slack."""
    starts: dict[str, list[float]] = defaultdict(list)
    durations: dict[str, list[float]] = defaultdict(list)
    for run in bots:
        seen: dict[str, int] = defaultdict(int)
        for label, start, end in sorted(run.trace, key=lambda t: t[1]):
            if start - run.post_at > run.pid_s:
                continue
            seen[label] += 1
            key = f"{label}#{seen[label]}" if seen[label] > 1 else label
            starts[key].append(1000 * (start - run.post_at))
            durations[key].append(1000 * (end - start))
    rows = [(key, statistics.median(starts[key]), statistics.median(durations[key]), len(starts[key]))
            for key in starts]
    return sorted(rows, key=lambda r: r[1])


def path_totals(bots: list[BotRun]) -> dict[str, float]:
    """Median over the requests of the time spent before the PID in each kind of call (summed; calls that ran at
    the same time as others count in full, so the sum can pass the PID time once work overlaps)."""
    totals: dict[str, list[float]] = defaultdict(list)
    for run in bots:
        per: dict[str, float] = defaultdict(float)
        for label, start, end in run.trace:
            if start - run.post_at > run.pid_s or label in ("story", "bolt:on_deploy") or label.startswith("emit:"):
                continue
            group = label.split(":")[0] if label.startswith(("slack:", "store:")) else label
            per[group] += 1000 * (min(end, run.post_at + run.pid_s) - start)
        for group, value in per.items():
            totals[group].append(value)
    return {group: statistics.median(values) for group, values in totals.items()}


def report(result: dict[str, Any]) -> None:
    runs, first = result["runs"], result["first"]
    floors = runs["floor"]
    figure("rounds", len(floors), "(each: floor, bot on a new SSH connection, bot on its pooled one; order rotated)")
    figure("bot_first_request_to_pid", first.pid_s, "s (warm-up, not counted: also fetches --help)")
    spread("floor_request_to_pid", floors, "s", what="(asyncssh: connect, probe agent, setsid nohup)")
    for step, values in result["floor_parts"].items():
        spread(f"floor_{step}", values, "ms", 1000)
    for kind in ("bot_new_connection", "bot_pooled"):
        bots = runs[kind]
        spread(f"{kind}_request_to_pid", [b.pid_s for b in bots], "s", what="(POST -> PID at Slack's Web API)")
        spread(f"{kind}_ack", [b.ack_s for b in bots], "ms", 1000)
        spread(f"ratio_{kind}_over_floor", [b.pid_s / f for b, f in zip(bots, floors)], "x", what="(per round)")
    for kind in ("bot_new_connection", "bot_pooled"):
        bots = runs[kind]
        print(f"# {kind}: median timeline to the PID (ms after the POST: start, duration; n requests)")
        for key, start, duration, count in timeline(bots):
            print(f"#   {start:8.1f} {duration:7.1f}  {key}{'' if count == len(bots) else f' (in {count})'}")
        print(f"#   {1000 * statistics.median(b.pid_s for b in bots):8.1f}          PID at Slack")
        for group, value in sorted(path_totals(bots).items(), key=lambda kv: -kv[1]):
            figure(f"{kind}_time_in_{group.replace(':', '_')}", value, "ms (summed, before the PID; median)")
    ratios = [b.pid_s / f for b, f in zip(runs["bot_new_connection"], floors)]
    pooled = [b.pid_s / f for b, f in zip(runs["bot_pooled"], floors)]
    med = statistics.median(ratios)
    verdict = "within" if med <= 1.3 else "MORE than"
    summary(f"request to PID through Slack: bot {statistics.median(b.pid_s for b in runs['bot_new_connection']):.3f} s "
            f"on a new SSH connection ({med:.2f}x, min {min(ratios):.2f}, max {max(ratios):.2f}), "
            f"{statistics.median(b.pid_s for b in runs['bot_pooled']):.3f} s on its pooled one "
            f"({statistics.median(pooled):.2f}x), plain asyncssh {statistics.median(floors):.3f} s; "
            f"median of {len(floors)} rounds: {verdict} 1.3x the floor")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--no-trace", action="store_true", help="do not time the app's steps (no wrappers)")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve_child(json.loads(args.serve.read_text())))
        return 0
    missing = require_sshd()
    if missing:
        print(f"bench_slack_pid: {missing}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-slack-pid-") as folder:
        note(f"request: {START!r} as a signed /deploy; host: simulated 2x RTX A6000 behind a real sshd; "
             f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
        report(asyncio.run(measure(args, Path(folder))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
