"""Benchmark: how fast `/deploy` is acknowledged by the real Bolt app, against a bare Bolt app that only acks.

This process plays Slack: a local Slack Web API server (tests/fakeslack.py) and a client that sends 200 correctly
signed `/deploy` requests (tests/slack_signing.py), 20 at a time, timing each from send to response. The app under
test runs in its own process, served by aiohttp on 127.0.0.1; both apps stay up for the whole run and their loads
alternate (bare, bot, bot, bare, ...: `--pairs`, default 9), each pair compared within itself, the median, min and
max of the per-pair ratios printed (the 2-core machine is shared: only ratios within one moment are stable):

- the floor: a bare Bolt AsyncApp (same signing secret, same client) whose `/deploy` only calls ack();
- the bot: the real `SlackService` (handlers/slack/serve.py: Bolt app, pipeline, SQLite store).

The bot's requests are 4 in 5 "start Qwen3-8B on CT129", acked empty and then run in the background (a thread in
the channel, the pipeline's steps); CT129 is a host with transport local whose engine python does not exist, so
each of those deploys fails fast at the probe ("the engine python ... was not found") and no engine ever starts.
1 in 5 are bad requests (unknown host, nonsense, a shell metacharacter), answered in the ack itself. After each
load the app drains: every deploy it started finishes its story before the next load (of either app) begins.

    .venv/bin/python bench/bench_ack.py [--requests 200] [--concurrency 20] [--pairs 9]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, figure, note, peak_rss_mib, percentile, ratio, summary, thread_cpu_seconds  # noqa: E402

from tests import slack_signing  # noqa: E402
from tests.fakeslack import FakeSlack  # noqa: E402

SIGNING_SECRET = "8f14e45fceea167a5a36dedd4bea2543"
EVENTS_PATH = "/slack/events"  # Bolt's default path; handlers.slack.app.EVENTS_PATH
HOST = "CT129"
MODEL = "Qwen3-8B"
START = f"start {MODEL} on {HOST}"
BAD_REQUESTS = (f"start {MODEL} on CT999", "make me a sandwich", f"start {MODEL} on {HOST}; rm -rf /")
WARMUP = 5
SLACK_LIMIT_S = 3.0
DRAIN_TIMEOUT_S = 90.0
CHILD_START_TIMEOUT_S = 60.0


# --------------------------------------------------------------------------------------------- the apps (child)


async def serve_bare(spec: dict) -> dict:
    """The floor: Bolt with nothing behind /deploy but ack()."""
    from aiohttp import web
    from slack_bolt.app.async_app import AsyncApp
    from slack_bolt.context.ack.async_ack import AsyncAck
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=os.environ["SLACK_BOT_TOKEN"], base_url=os.environ["SLACK_API_URL"])
    app = AsyncApp(client=client, signing_secret=os.environ["SLACK_SIGNING_SECRET"], process_before_response=False)

    async def only_ack(ack: AsyncAck) -> None:
        await ack()

    app.command("/deploy")(only_ack)
    runner = web.AppRunner(app.web_app(path=EVENTS_PATH), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()

    async def drained() -> dict:
        return {"pending_at_end_of_load": 0, "left": 0, "drain_s": 0.0}

    try:
        await _serve_until_eof(int(runner.addresses[0][1]), drained)
    finally:
        await runner.cleanup()
    return {}


def _unpooled_story_client(service) -> Callable[[], None]:  # type: ignore[no-untyped-def]
    """Before: the stories used Bolt's client, which opens a new HTTP connection for every Web API call."""
    surface = service.surface
    pooled, surface.story_client = surface.story_client, surface.client

    def restore() -> None:
        surface.story_client = pooled

    return restore


def _no_ack_gate(service) -> Callable[[], None]:  # type: ignore[no-untyped-def]
    """Before: a story started at once, its Python work sharing the GIL with the acks still pending."""
    gate = service.surface.acks
    wait = gate.max_wait_s
    gate.max_wait_s = 0.0

    def restore() -> None:
        gate.max_wait_s = wait

    return restore


def _no_gc_freeze(service) -> Callable[[], None]:  # type: ignore[no-untyped-def]
    """Before: the garbage collector's full passes went over every object start-up made."""
    import gc

    gc.unfreeze()
    return lambda: None


#: What `--before NAME` undoes in a third app, to show a fix's effect in the same run (each returns its restore).
BEFORE: dict[str, Callable[..., Callable[[], None]]] = {"pooled_story_client": _unpooled_story_client,
                                                        "ack_gate": _no_ack_gate, "gc_freeze": _no_gc_freeze}


async def serve_bot(spec: dict) -> dict:
    """The real app (SlackService), draining the deploys it started after each load; `spec["before"]`: the fixes
    undone in this app (BEFORE)."""
    from bot.config import Secrets, parse_config
    from bot.store import Store
    from handlers.slack.serve import SlackService, freeze_startup_objects

    store = Store(spec["db"])
    service = SlackService(parse_config(spec["config"], "bench config"), store, Secrets(), port=0, host="127.0.0.1")
    await service.start()
    freeze_startup_objects()  # as `deploybot serve` does after the start
    restores = [BEFORE[name](service) for name in spec.get("before", [])]
    diagnosed: list[float] = []
    churn = (asyncio.ensure_future(_diagnose_forever(service, spec["crash_line_mb"], spec.get("inline", False),
                                                     diagnosed)) if spec.get("crash_line_mb") else None)
    async def drained() -> dict:
        """After a load: every deploy that was acked must finish its story (drained, not cut off)."""
        started = time.perf_counter()
        spawned = len(service.surface.tasks)
        while service.surface.tasks and time.perf_counter() - started < DRAIN_TIMEOUT_S:
            await asyncio.sleep(0.05)
        return {"pending_at_end_of_load": spawned, "left": len(service.surface.tasks),
                "drain_s": time.perf_counter() - started, "diagnoses": len(diagnosed),
                "diagnosis_p50_s": sorted(diagnosed)[len(diagnosed) // 2] if diagnosed else 0}

    try:
        assert service.port is not None
        await _serve_until_eof(service.port, drained, churn)
    finally:
        if churn is not None:
            churn.cancel()
        for restore in restores:
            restore()
        await service.stop()  # cancels whatever is left (nothing, unless a drain timed out)
        store.close()
    return {}


async def _diagnose_forever(service, megabytes: int, inline: bool, done: list[float]) -> None:
    """Back to back, for as long as the app serves: the diagnosis of a crash tail ending in a `megabytes` MB line,
    through the app's own diagnoser (a worker process in `deploybot serve`), or, with `inline`, called on the
    event loop itself (how it ran before the diagnoser moved off the ack path)."""
    from bot.diagnose import diagnose

    crash = json.loads((REPO / "tests" / "data" / "crashlogs" / "dev" / "sglang-003.json").read_text())["log"]
    tail = crash + "\n" + "--a " * (megabytes * (1 << 20) // 4)
    while True:
        started = time.perf_counter()
        if inline:
            diagnose(tail)
        else:
            await service.pipeline.diagnoser.diagnose(tail)
        done.append(time.perf_counter() - started)
        await asyncio.sleep(0)


PROFILER: cProfile.Profile | None = None


async def _serve_until_eof(port: int, drained: Callable[[], Awaitable[dict]],
                           churn: asyncio.Future[None] | None = None) -> None:
    """Announce the port, then serve load after load until stdin ends. After each load the parent writes a line:
    the app drains its background work and answers (one JSON line) with the process CPU seconds that load and its
    drain used. `churn` (the back-to-back diagnosis) is stopped before the first drain."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    cpu, threads = time.process_time(), thread_cpu_seconds()
    if PROFILER is not None:
        PROFILER.enable()
    print(f"listening {port}", flush=True)
    while await reader.readline():
        serving_s = time.process_time() - cpu
        if churn is not None:
            churn.cancel()
        figures = await drained()
        now = thread_cpu_seconds()
        by_thread = {name: now[name] - threads.get(name, 0.0) for name in now}
        print(json.dumps({"cpu_s": time.process_time() - cpu, "serving_cpu_s": serving_s, "threads_cpu_s": by_thread,
                          **figures}), flush=True)
        cpu, threads = time.process_time(), now
    if PROFILER is not None:
        PROFILER.disable()


def profile_story_loop() -> cProfile.Profile:
    """cProfile the stories' own thread too (a profiler sees only the thread that enabled it)."""
    from handlers.slack.app import StoryLoop

    profiler = cProfile.Profile()
    run = StoryLoop._run

    def profiled(self: StoryLoop) -> None:
        profiler.enable()
        try:
            run(self)
        finally:
            profiler.disable()

    StoryLoop._run = profiled  # type: ignore[method-assign]
    return profiler


def child_main(kind: str, spec_file: Path, profile: bool) -> int:
    global PROFILER
    spec = json.loads(spec_file.read_text())
    PROFILER = cProfile.Profile() if profile else None
    stories = profile_story_loop() if profile and kind != "bare" else None
    result = asyncio.run(serve_bare(spec) if kind == "bare" else serve_bot(spec))
    result["rss_peak_mib"] = peak_rss_mib()
    result["final"] = True
    if PROFILER is not None:
        out = io.StringIO()
        stats = pstats.Stats(PROFILER, stream=out)
        stats.sort_stats("tottime").print_stats(15)
        stats.sort_stats("cumulative").print_stats(r"bot/|handlers/|slack_bolt/|sqlite", 25)
        if stories is not None:
            print("\n=== the story loop's thread:", file=out)
            stats = pstats.Stats(stories, stream=out)
            stats.sort_stats("tottime").print_stats(20)
            stats.sort_stats("cumulative").print_stats(r"bot/|handlers/|slack_sdk/|aiohttp/", 30)
        result["profile"] = out.getvalue()
    print(json.dumps(result), flush=True)
    return 0


# --------------------------------------------------------------------------------------------- Slack's side


@dataclass
class Ack:
    seconds: float
    status: int
    body: str
    bad_request: bool
    sent_at: float = 0.0  # seconds after the load's first counted request was sent


class AppProcess:
    """The app under test in its own process; started, then stopped with SIGTERM (and killed if it hangs)."""

    def __init__(self, kind: str, spec_file: Path, env: dict[str, str], profile: bool = False) -> None:
        self.kind = kind
        self.profile = profile
        self.spec_file = spec_file
        self.env = env
        self.process: asyncio.subprocess.Process | None = None
        self.port = 0

    async def __aenter__(self) -> AppProcess:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__).resolve()), "--serve", self.kind, str(self.spec_file),
            *(["--profile"] if self.profile else []), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=self.env, cwd=REPO)
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), CHILD_START_TIMEOUT_S)
        if not line.startswith(b"listening "):
            await self._kill()
            raise RuntimeError(f"the {self.kind} app did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    async def after_load(self) -> dict:
        """The load is over: the app drains its background work, then says what the load cost it."""
        assert self.process is not None and self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(b"drain\n")
        await self.process.stdin.drain()
        return json.loads(await asyncio.wait_for(self.process.stdout.readline(), DRAIN_TIMEOUT_S + 30))

    async def stop(self) -> dict:
        """End of input: the app stops and prints its own figures (peak RSS, the profile)."""
        assert self.process is not None and self.process.stdout is not None and self.process.stdin is not None
        self.process.stdin.close()
        out = await asyncio.wait_for(self.process.stdout.read(), DRAIN_TIMEOUT_S + 30)
        code = await self.process.wait()
        if code != 0:
            err = await self.process.stderr.read() if self.process.stderr else b""
            raise RuntimeError(f"the {self.kind} app exited {code}: {err.decode(errors='replace')[-2000:]}")
        return json.loads(out.decode().strip().splitlines()[-1])

    async def _kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()

    async def __aexit__(self, *exc_info: object) -> None:
        await self._kill()  # only if stop() was not reached (an error on the way)


def requests_for(n: int) -> list[str]:
    """4 in 5 deploys, 1 in 5 bad requests (each kind of bad request in turn)."""
    return [BAD_REQUESTS[(i // 5) % len(BAD_REQUESTS)] if i % 5 == 4 else START for i in range(n)]


async def load(url: str, response_url: str, texts: list[str], concurrency: int) -> list[Ack]:
    """Slack's request sender: signed /deploy requests, `concurrency` at a time, each timed send -> response."""
    gate = asyncio.Semaphore(concurrency)
    load_started: float | None = None

    async def one(session: aiohttp.ClientSession, text: str) -> Ack:
        request = slack_signing.slash_command(SIGNING_SECRET, text=text, response_url=response_url)
        async with gate:
            started = time.perf_counter()
            async with session.post(url, data=request.body, headers=request.headers) as response:
                body = await response.text()
            return Ack(time.perf_counter() - started, response.status, body, text != START,
                       started - (load_started or started))

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        for text in texts[:WARMUP]:  # not counted: first-request costs (auth.test, first SQLite writes)
            await one(session, text)
        load_started = time.perf_counter()
        return await asyncio.gather(*(one(session, t) for t in texts[WARMUP:]))


def load_main(spec_file: Path) -> int:
    """The load generator in its own process, so that the Web API server (FakeSlack, in the parent) answering
    the bot's calls never delays the clock that times the acks."""
    spec = json.loads(spec_file.read_text())
    acks = asyncio.run(load(spec["url"], spec["response_url"], spec["texts"], spec["concurrency"]))
    print(json.dumps([a.__dict__ for a in acks]), flush=True)
    return 0


async def run_load(url: str, slack: FakeSlack, texts: list[str], concurrency: int, work: Path) -> list[Ack]:
    spec = work / "load.json"
    spec.write_text(json.dumps({"url": url, "response_url": slack.response_url(), "texts": texts,
                                "concurrency": concurrency}))
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).resolve()), "--load", str(spec),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        out, err = await asyncio.wait_for(process.communicate(), DRAIN_TIMEOUT_S)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    if process.returncode != 0:
        raise RuntimeError(f"the load generator failed: {err.decode(errors='replace')[-2000:]}")
    return [Ack(**a) for a in json.loads(out.decode().strip().splitlines()[-1])]


def bot_config(work: Path) -> dict:
    models = work / "models"
    models.mkdir(exist_ok=True)
    return {
        "hosts": {HOST: {"transport": "local", "python": str(work / "no-such-env" / "bin" / "python3"),
                         "models_dir": str(models), "log_dir": str(work / "logs"), "models": [MODEL],
                         "gpus": "2x NVIDIA RTX A6000"}},
        "policy": {"approvers": ["U0BOB"]},
        "slack": {"excerpt_interval_s": 1.0, "excerpt_max_lines": 8},
    }


@dataclass
class Load:
    """One burst sent to one app: its acks, what the app says it cost, and how many deploy threads were told."""

    acks: list[Ack]
    served: dict
    told: int

    def pct(self, value: float, deploys_only: bool = False) -> float:
        return percentile([a.seconds for a in self.acks if not (deploys_only and a.bad_request)], value)


async def one_load(app: AppProcess, slack: FakeSlack, texts: list[str], concurrency: int, work: Path) -> Load:
    before = threads_that_failed_fast(slack)
    acks = await run_load(f"http://127.0.0.1:{app.port}{EVENTS_PATH}", slack, texts, concurrency, work)
    served = await app.after_load()  # drained: the next load (either app) never shares the CPU with these stories
    return Load(acks, served, len(threads_that_failed_fast(slack) - before))


def write_spec(work: Path, name: str, **extra: object) -> Path:
    spec = work / f"{name}.json"  # each app its own store: no app sees another's deliveries
    spec.write_text(json.dumps({"config": bot_config(work), "db": str(work / f"{name}.sqlite3"), **extra}))
    return spec


async def measure(args: argparse.Namespace, work: Path) -> int:
    texts = requests_for(args.requests + WARMUP)
    # The bot's ack path alone: bad requests only, nothing runs after the ack.
    bad_only = [BAD_REQUESTS[i % len(BAD_REQUESTS)] for i in range(len(texts))]
    loads: dict[str, list[Load]] = {"bare": [], "bot": []}
    finals: dict[str, dict] = {}
    async with FakeSlack() as slack:
        env = {**os.environ, "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
               "SLACK_API_URL": slack.base_url}
        env.pop("SLACK_APP_TOKEN", None)  # HTTP mode, never Socket Mode
        # Both apps stay up for the whole run; their loads alternate (bare, bot, bot, bare, ...), so that the
        # machine's load at a given moment falls on both, and each pair is compared within itself.
        async with AppProcess("bare", write_spec(work, "bare"), env) as bare, \
                AppProcess("bot", write_spec(work, "bot"), env, profile=args.profile) as bot:
            apps = {"bare": bare, "bot": bot}
            async with contextlib.AsyncExitStack() as stack:
                if args.before:
                    loads["bot_before"] = []
                    apps["bot_before"] = await stack.enter_async_context(
                        AppProcess("bot", write_spec(work, "bot_before", before=args.before), env))
                names = list(apps)
                for index in range(args.pairs):
                    # Rotated (bare, bot; bot, bare; ...), so that no app always runs first or last.
                    order = names[index % len(names):] + names[:index % len(names)]
                    for name in order if index % 2 == 0 or len(names) > 2 else order[::-1]:
                        loads[name].append(await one_load(apps[name], slack, texts, args.concurrency, work))
                if args.before:
                    await apps["bot_before"].stop()
            loads["bot_ack_path"] = [await one_load(bot, slack, bad_only, args.concurrency, work)]
            finals = {"bare": await bare.stop(), "bot": await bot.stop()}
        if args.crash_line_mb:
            # The same mixed load while the diagnosis of a crash ending in a huge line runs all the time.
            for name, inline in (("bot_diagnosing", False), ("bot_diagnosing_inline", True)):
                spec = write_spec(work, name, crash_line_mb=args.crash_line_mb, inline=inline)
                async with AppProcess("bot", spec, env) as app:
                    loads[name] = [await one_load(app, slack, texts, args.concurrency, work)]
                    await app.stop()
    return report(loads, finals, texts)


def threads_that_failed_fast(slack: FakeSlack) -> set[str]:
    """Threads whose story ended with the probe's failure: every acked deploy must have been carried through."""
    return {m.thread_ts for m in slack.messages()
            if m.thread_ts and (m.text or "").startswith("❌") and "not found" in (m.text or "")}


def report_diagnosing(loads: dict[str, list[Load]]) -> None:
    """The ack latency while a crash with a huge last line is diagnosed, against the same load without."""
    ms = 1000.0
    for name, label in (("bot_diagnosing", "diagnosis in the worker process"),
                        ("bot_diagnosing_inline", "diagnosis on the event loop (before)")):
        if name not in loads:
            continue
        load = loads[name][0]
        figure(f"{name}_ack_p50", ms * load.pct(50), f"ms ({label})")
        figure(f"{name}_ack_p99", ms * load.pct(99), "ms")
        if load.served.get("diagnoses"):
            figure(f"{name}_diagnoses_during_load", load.served["diagnoses"],
                   f"(p50 {ms * load.served['diagnosis_p50_s']:.0f} ms each)")


def spread(name: str, values: list[float], unit: str, what: str = "") -> float:
    med = statistics.median(values)
    figure(name, med, f"{unit} (median of {len(values)}; min {min(values):.3f}, max {max(values):.3f})"
                      + (f" {what}" if what else ""))
    return med


def report(loads: dict[str, list[Load]], finals: dict[str, dict], sent: list[str]) -> int:
    """`sent`: every request sent to an app in one load, warm-up included."""
    report_diagnosing(loads)
    ms = 1000.0
    bares, bots = loads["bare"], loads["bot"]
    texts = sent[WARMUP:]
    deploys = sum(1 for t in texts if t == START)
    figure("pairs", len(bots), "(loads of the bare app and the bot, alternating; each pair compared within itself)")
    figure("requests", len(bots[0].acks), f"per load ({deploys} deploys, {len(texts) - deploys} bad requests; after "
                                          f"{WARMUP} warm-up requests)")
    for app, group in (("floor", bares), ("bot", bots)):
        for pct in (50, 99):
            spread(f"{app}_ack_p{pct}", [ms * load.pct(pct) for load in group], "ms",
                   "(bare Bolt app, ack only)" if app == "floor" and pct == 50 else "")
    p99 = spread("ratio_p99_bot_over_floor", [b.pct(99) / f.pct(99) for b, f in zip(bots, bares)], "x", "(per pair)")
    p50 = spread("ratio_p50_bot_over_floor", [b.pct(50) / f.pct(50) for b, f in zip(bots, bares)], "x", "(per pair)")
    if loads.get("bot_before"):
        befores = loads["bot_before"]
        spread("bot_before_ack_p99", [ms * load.pct(99) for load in befores], "ms", "(the same app, fixes undone: "
               "the fixes given to --before)")
        spread("ratio_p99_before_over_floor", [b.pct(99) / f.pct(99) for b, f in zip(befores, bares)], "x")
        spread("ratio_p50_before_over_floor", [b.pct(50) / f.pct(50) for b, f in zip(befores, bares)], "x")
    every_bot = [a.seconds for load in bots for a in load.acks]
    every_bare = [a.seconds for load in bares for a in load.acks]
    figure("bot_ack_p99_all_pairs", ms * percentile(every_bot, 99), f"ms (all {len(every_bot)} acks together)")
    figure("floor_ack_p99_all_pairs", ms * percentile(every_bare, 99), "ms")
    figure("ratio_p99_all_pairs", ratio(percentile(every_bot, 99), percentile(every_bare, 99)), "x")
    figure("bot_ack_max", ms * max(every_bot), "ms")
    slowest = sorted((a for load in bots for a in load.acks), key=lambda a: -a.seconds)[:2 * len(bots)]
    figure("bot_slowest_acks", ", ".join(f"{ms * a.seconds:.0f} ms at +{ms * a.sent_at:.0f}" for a in slowest),
           "(ack, and when it was sent after the load began)")
    figure("bot_ack_p50_deploys", statistics.median(ms * load.pct(50, deploys_only=True) for load in bots), "ms")
    path = loads["bot_ack_path"][0]
    figure("bot_ack_path_p50", ms * path.pct(50), "ms (bad requests only: no work after the ack; one load)")
    figure("bot_ack_path_p99", ms * path.pct(99), "ms")
    figure("ratio_p50_ack_path_over_floor", ratio(path.pct(50), statistics.median(f.pct(50) for f in bares)), "x")
    figure("acks_over_slack_limit", sum(1 for s in every_bot if s > SLACK_LIMIT_S), f"(limit {SLACK_LIMIT_S:.0f} s)")
    errors = sum(1 for load in bots + bares + [path] for a in load.acks if a.status != 200)
    figure("http_errors", errors)
    figure("bad_requests_answered_in_ack", sum(1 for load in bots for a in load.acks if a.bad_request and a.body))
    figure("deploys_started_after_ack", statistics.median(load.served["pending_at_end_of_load"] for load in bots),
           "(median; still running when a load ended)")
    all_deploys = sum(1 for t in sent if t == START) * len(bots)
    told = sum(load.told for load in bots)
    figure("deploy_threads_told_failure", f"{told}/{all_deploys}", "(warm-up deploys included)")
    # The ack path's CPU per request, from the bad-requests-only load; the rest of a mixed load is the stories.
    per_ack = path.served["cpu_s"] / len(sent)
    figure("bot_cpu_per_ack", 1000 * per_ack, "ms (bad-requests-only load)")
    story_ms = [1000 * (load.served["cpu_s"] - per_ack * len(sent)) / (all_deploys / len(bots)) for load in bots]
    figure("bot_cpu_per_deploy_story", statistics.median(story_ms), "ms (median; after the ack: thread, status "
                                                                    "message, probe, failure)")
    names = sorted({name for load in bots for name in load.served["threads_cpu_s"]})
    for name in names:
        cpu = statistics.median(load.served["threads_cpu_s"].get(name, 0.0) for load in bots)
        if cpu > 0:
            figure(f"bot_cpu_thread_{name.strip('_-') or 'main'}", 1000 * cpu, "ms (median per load, drain included)")
    figure("background_drain", statistics.median(load.served["drain_s"] for load in bots), "s (median)")
    left = sum(load.served["left"] for load in bots)
    figure("background_left_after_drain", left)
    figure("bot_rss_peak", finals["bot"]["rss_peak_mib"], "MiB")
    figure("floor_rss_peak", finals["bare"]["rss_peak_mib"], "MiB")
    verdict = "within 1.5x of" if p99 <= 1.5 else "MORE than 1.5x"
    summary(f"/deploy acked at 20 concurrent, {len(bots)} pairs: p99 {p99:.2f}x the bare Bolt app (median of the "
            f"per-pair ratios), p50 {p50:.2f}x, {verdict} the floor at p99; slowest {ms * max(every_bot):.0f} ms "
            f"against Slack's 3000 ms")
    if finals["bot"].get("profile"):
        print("# cProfile of the real app while serving (top by own time; then bot/handlers/Bolt by cumulative):")
        for line in finals["bot"]["profile"].splitlines():
            print(f"#   {line}")
    return 0 if errors == 0 and left == 0 and told == all_deploys else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=9, help="loads of each app, alternating (median of the ratios)")
    parser.add_argument("--profile", action="store_true", help="cProfile the real app while it serves")
    parser.add_argument("--crash-line-mb", type=int, default=0,
                        help="also run the load while a crash ending in a line of this many MB is diagnosed")
    parser.add_argument("--before", nargs="+", choices=sorted(BEFORE), default=[],
                        help="also run, alternating with the others, an app with these fixes undone")
    parser.add_argument("--serve", choices=("bare", "bot"), help=argparse.SUPPRESS)
    parser.add_argument("--load", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("spec", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return child_main(args.serve, args.spec, args.profile)
    if args.load:
        return load_main(args.load)
    with tempfile.TemporaryDirectory(prefix="bench-ack-") as folder:
        note("Slack (this process) -> signed /deploy over HTTP -> the app (its own process) on 127.0.0.1")
        return asyncio.run(measure(args, Path(folder)))


if __name__ == "__main__":
    raise SystemExit(main())
