"""Benchmark: how fast `/deploy` is acknowledged by the real Bolt app, against a bare Bolt app that only acks.

This process plays Slack: a local Slack Web API server (tests/fakeslack.py) and a client that sends 200 correctly
signed `/deploy` requests (tests/slack_signing.py), 20 at a time, timing each from send to response. The app under
test runs in its own process, served by aiohttp on 127.0.0.1, one after the other:

- the floor: a bare Bolt AsyncApp (same signing secret, same client) whose `/deploy` only calls ack();
- the bot: the real `SlackService` (handlers/slack/serve.py: Bolt app, pipeline, SQLite store).

The bot's requests are 4 in 5 "start Qwen3-8B on CT129", acked empty and then run in the background (a thread in
the channel, the pipeline's steps); CT129 is a host with transport local whose engine python does not exist, so
each of those deploys fails fast at the probe ("the engine python ... was not found") and no engine ever starts.
1 in 5 are bad requests (unknown host, nonsense, a shell metacharacter), answered in the ack itself. After the
load the bot is asked to stop; it first waits for every deploy it started to finish (drained), then stops.

    .venv/bin/python bench/bench_ack.py [--requests 200] [--concurrency 20]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, figure, note, peak_rss_mib, percentile, ratio, summary  # noqa: E402

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
    try:
        cpu = await _serve_until_term(int(runner.addresses[0][1]))
    finally:
        await runner.cleanup()
    return {"cpu_s": cpu, "drained": 0, "left": 0, "drain_s": 0.0}


async def serve_bot(spec: dict, pooled_client: bool) -> dict:
    """The real app (SlackService), then a drain of the deploys it started after its acks.

    pooled_client: the same app given a Web API client that keeps its HTTP connections (an aiohttp session),
    instead of handlers.slack.client's, which (slack_sdk's default) opens a new connection for every call.
    """
    from bot.config import Secrets, parse_config
    from bot.store import Store
    from handlers.slack.client import make_web_client
    from handlers.slack.serve import SlackService

    store = Store(spec["db"])
    secrets = Secrets()
    client = make_web_client(secrets)
    if pooled_client:
        client.session = aiohttp.ClientSession()
    service = SlackService(parse_config(spec["config"], "bench config"), store, secrets, port=0, host="127.0.0.1",
                           client=client)
    await service.start()
    diagnosed: list[float] = []
    churn = (asyncio.ensure_future(_diagnose_forever(service, spec["crash_line_mb"], spec.get("inline", False),
                                                     diagnosed)) if spec.get("crash_line_mb") else None)
    try:
        assert service.port is not None
        cpu = await _serve_until_term(service.port)
        if churn is not None:
            churn.cancel()
        # Drained, not cut off: every deploy that was acked must finish its story before the app stops.
        started = time.perf_counter()
        spawned = len(service.surface.tasks)
        while service.surface.tasks and time.perf_counter() - started < DRAIN_TIMEOUT_S:
            await asyncio.sleep(0.05)
        left = len(service.surface.tasks)
        drain_s = time.perf_counter() - started
    finally:
        await service.stop()  # cancels whatever is left (nothing, unless the drain timed out)
        store.close()
        if client.session is not None:
            await client.session.close()
    return {"cpu_s": cpu, "pending_at_end_of_load": spawned, "left": left, "drain_s": drain_s,
            "diagnoses": len(diagnosed), "diagnosis_p50_s": sorted(diagnosed)[len(diagnosed) // 2] if diagnosed else 0}


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


async def _serve_until_term(port: int) -> float:
    """Announce the port, serve until SIGTERM; returns the process CPU seconds used while serving."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    cpu = time.process_time()
    if PROFILER is not None:
        PROFILER.enable()
    print(f"listening {port}", flush=True)
    await stop.wait()
    if PROFILER is not None:
        PROFILER.disable()
    return time.process_time() - cpu


def child_main(kind: str, spec_file: Path, profile: bool) -> int:
    global PROFILER
    spec = json.loads(spec_file.read_text())
    PROFILER = cProfile.Profile() if profile else None
    result = asyncio.run(serve_bare(spec) if kind == "bare" else serve_bot(spec, pooled_client=kind == "pooled"))
    result["rss_peak_mib"] = peak_rss_mib()
    if PROFILER is not None:
        out = io.StringIO()
        stats = pstats.Stats(PROFILER, stream=out)
        stats.sort_stats("tottime").print_stats(15)
        stats.sort_stats("cumulative").print_stats(r"bot/|handlers/|slack_bolt/|sqlite", 25)
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
            *(["--profile"] if self.profile else []),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=self.env, cwd=REPO)
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), CHILD_START_TIMEOUT_S)
        if not line.startswith(b"listening "):
            await self._kill()
            raise RuntimeError(f"the {self.kind} app did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    async def stop(self) -> dict:
        """SIGTERM, then the app's own figures (it drains its background work first)."""
        assert self.process is not None and self.process.stdout is not None
        self.process.send_signal(signal.SIGTERM)
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

    async def one(session: aiohttp.ClientSession, text: str) -> Ack:
        request = slack_signing.slash_command(SIGNING_SECRET, text=text, response_url=response_url)
        async with gate:
            started = time.perf_counter()
            async with session.post(url, data=request.body, headers=request.headers) as response:
                body = await response.text()
            return Ack(time.perf_counter() - started, response.status, body, text != START)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        for text in texts[:WARMUP]:  # not counted: first-request costs (auth.test, first SQLite writes)
            await one(session, text)
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


async def measure(args: argparse.Namespace, work: Path) -> int:
    texts = requests_for(args.requests + WARMUP)
    async with FakeSlack() as slack:
        env = {**os.environ, "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
               "SLACK_API_URL": slack.base_url}
        env.pop("SLACK_APP_TOKEN", None)  # HTTP mode, never Socket Mode
        results: dict[str, tuple[list[Ack], dict]] = {}
        told: dict[str, int] = {}
        # The bot's ack path alone (bad requests only: nothing runs after the ack), then the mixed load.
        bad_only = [BAD_REQUESTS[i % len(BAD_REQUESTS)] for i in range(len(texts))]
        runs = [("bare", "bare", texts), ("bot_ack_path", "bot", bad_only), ("bot", "bot", texts)]
        extra: dict[str, dict] = {}
        if args.crash_line_mb:
            # The same mixed load while the diagnosis of a crash ending in a huge line runs all the time.
            runs += [("bot_diagnosing", "bot", texts), ("bot_diagnosing_inline", "bot", texts)]
            extra = {"bot_diagnosing": {"crash_line_mb": args.crash_line_mb},
                     "bot_diagnosing_inline": {"crash_line_mb": args.crash_line_mb, "inline": True}}
        for name, kind, sent in runs:
            spec = work / f"{name}.json"  # each run its own store: no run sees another's deliveries
            spec.write_text(json.dumps({"config": bot_config(work), "db": str(work / f"{name}.sqlite3"),
                                        **extra.get(name, {})}))
            before = threads_that_failed_fast(slack)
            async with AppProcess(kind, spec, env, profile=args.profile and name == "bot") as app:
                acks = await run_load(f"http://127.0.0.1:{app.port}{EVENTS_PATH}", slack, sent, args.concurrency,
                                      work)
                results[name] = (acks, await app.stop())
            told[name] = len(threads_that_failed_fast(slack) - before)
    return report(results, told, texts)


def threads_that_failed_fast(slack: FakeSlack) -> set[str]:
    """Threads whose story ended with the probe's failure: every acked deploy must have been carried through."""
    return {m.thread_ts for m in slack.messages()
            if m.thread_ts and (m.text or "").startswith("❌") and "not found" in (m.text or "")}


def report_diagnosing(results: dict[str, tuple[list[Ack], dict]]) -> None:
    """The ack latency while a crash with a huge last line is diagnosed, against the same load without."""
    ms = 1000.0
    for name, label in (("bot", "no diagnosis running"), ("bot_diagnosing", "diagnosis in the worker process"),
                        ("bot_diagnosing_inline", "diagnosis on the event loop (before)")):
        if name not in results:
            continue
        acks, served = results[name]
        seconds = [a.seconds for a in acks]
        figure(f"{name}_ack_p50", ms * percentile(seconds, 50), f"ms ({label})")
        figure(f"{name}_ack_p99", ms * percentile(seconds, 99), "ms")
        if served.get("diagnoses"):
            figure(f"{name}_diagnoses_during_load", served["diagnoses"],
                   f"(p50 {ms * served['diagnosis_p50_s']:.0f} ms each)")


def report(results: dict[str, tuple[list[Ack], dict]], told: dict[str, int], sent: list[str]) -> int:
    """`sent`: every request sent to the bot, warm-up included."""
    report_diagnosing(results)
    texts = sent[WARMUP:]
    bare_acks, bare = results["bare"]
    bot_acks, bot = results["bot"]
    bare_s = [a.seconds for a in bare_acks]
    bot_s = [a.seconds for a in bot_acks]
    deploys = sum(1 for t in texts if t == START)
    ms = 1000.0
    figure("requests", len(bot_acks), f"({deploys} deploys, {len(bot_acks) - deploys} bad requests; after "
                                      f"{WARMUP} warm-up requests)")
    figure("floor_ack_p50", ms * percentile(bare_s, 50), "ms (bare Bolt app, ack only)")
    figure("floor_ack_p99", ms * percentile(bare_s, 99), "ms")
    figure("bot_ack_p50", ms * percentile(bot_s, 50), "ms (the real app)")
    figure("bot_ack_p99", ms * percentile(bot_s, 99), "ms")
    figure("bot_ack_max", ms * max(bot_s), "ms")
    figure("bot_ack_p50_deploys", ms * percentile([a.seconds for a in bot_acks if not a.bad_request], 50), "ms")
    figure("bot_ack_p50_bad_requests", ms * percentile([a.seconds for a in bot_acks if a.bad_request], 50),
           "ms (answered in the ack)")
    path_s = [a.seconds for a in results["bot_ack_path"][0]]
    figure("bot_ack_path_p50", ms * percentile(path_s, 50), "ms (bad requests only: no work after the ack)")
    figure("bot_ack_path_p99", ms * percentile(path_s, 99), "ms")
    figure("ratio_p50_ack_path_over_floor", ratio(percentile(path_s, 50), percentile(bare_s, 50)), "x")
    figure("ratio_p50_bot_over_floor", ratio(percentile(bot_s, 50), percentile(bare_s, 50)), "x")
    figure("ratio_p99_bot_over_floor", ratio(percentile(bot_s, 99), percentile(bare_s, 99)), "x")
    figure("acks_over_slack_limit", sum(1 for s in bot_s if s > SLACK_LIMIT_S), f"(limit {SLACK_LIMIT_S:.0f} s)")
    errors = sum(1 for a in bot_acks + bare_acks if a.status != 200)
    figure("http_errors", errors)
    figure("bad_requests_answered_in_ack", sum(1 for a in bot_acks if a.bad_request and a.body))
    figure("deploys_started_after_ack", bot["pending_at_end_of_load"], "(still running when the load ended)")
    all_deploys = sum(1 for t in sent if t == START)
    figure("deploy_threads_told_failure", f"{told['bot']}/{all_deploys}", "(warm-up deploys included)")
    # The ack path's CPU per request, from the bad-requests-only run; the rest of the mixed run is the deploys' stories.
    per_ack = results["bot_ack_path"][1]["cpu_s"] / len(sent)
    figure("bot_cpu_per_ack", 1000 * per_ack, "ms (bad-requests-only run)")
    figure("bot_cpu_per_deploy_story", 1000 * (bot["cpu_s"] - per_ack * len(sent)) / all_deploys,
           "ms (after the ack: thread, status message, probe, failure)")
    figure("background_drain", bot["drain_s"], "s")
    figure("background_left_after_drain", bot["left"])
    figure("bot_cpu_while_serving", bot["cpu_s"], "s")
    figure("floor_cpu_while_serving", bare["cpu_s"], "s")
    figure("bot_rss_peak", bot["rss_peak_mib"], "MiB")
    figure("floor_rss_peak", bare["rss_peak_mib"], "MiB")
    p50, floor50 = percentile(bot_s, 50), percentile(bare_s, 50)
    verdict = "within 1.5x of" if p50 <= 1.5 * floor50 else "MORE than 1.5x"
    summary(f"/deploy acked in {ms * p50:.1f} ms p50 / {ms * percentile(bot_s, 99):.1f} ms p99 at 20 concurrent "
            f"(bare Bolt {ms * floor50:.1f} / {ms * percentile(bare_s, 99):.1f} ms: {p50 / floor50:.2f}x, {verdict} "
            f"the floor); slowest {ms * max(bot_s):.0f} ms against Slack's 3000 ms")
    if bot.get("profile"):
        print("# cProfile of the real app while serving (top by own time; then bot/handlers/Bolt by cumulative):")
        for line in bot["profile"].splitlines():
            print(f"#   {line}")
    return 0 if errors == 0 and bot["left"] == 0 and told["bot"] == all_deploys else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="cProfile the real app while it serves")
    parser.add_argument("--crash-line-mb", type=int, default=0,
                        help="also run the load while a crash ending in a line of this many MB is diagnosed")
    parser.add_argument("--serve", choices=("bare", "bot", "pooled"), help=argparse.SUPPRESS)
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
