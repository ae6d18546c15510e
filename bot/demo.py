"""`deploybot demo`: the real pipeline against a simulated GPU host (no GPU, no Slack, no SSH server needed).

It builds a host folder (fake nvidia-smi with 2x RTX A6000, real-shaped model folders, fake SGLang/vLLM engines),
points a `local` host entry named CT129 at it, and runs two requests through the same code as `deploybot ask`:
one healthy launch (plan, PID, excerpts, ready) and one that crashes (the crash and its diagnosis). Both servers are
stopped at the end.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

from bot.config import Secrets, parse_config
from bot.events import RecordingThread
from bot.pipeline import Pipeline, Requester
from bot.simhost import build_sim_host
from bot.store import Store
from handlers.console import ConsoleApprover, ConsoleThread

HEALTHY_REQUEST = "start Qwen3.6-27B on CT129 with stock MTP"
CRASH_REQUEST = "start Qwen3.6-27B on CT129 with stock MTP"
#: A real SGLang log from a public issue (docker-compose prefixes and all): the KV cache did not fit after the
#: weights loaded.
CRASH_SCENARIO = "crash:sglang-015"


class TeeThread:
    """Prints like the console and keeps the events (handy when extending the demo with checks)."""

    def __init__(self, console: Console) -> None:
        self.console_thread = ConsoleThread(console)
        self.record = RecordingThread()

    async def emit(self, event) -> None:  # type: ignore[no-untyped-def]
        await self.record.emit(event)
        await self.console_thread.emit(event)


async def run_demo(workdir: Path | None = None) -> int:
    console = Console(highlight=False, soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="deploybot-demo-") as tmp:
        root = Path(workdir) if workdir else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        sim = build_sim_host(root / "CT129", gpus="2xA6000",
                             models=["Qwen3.6-27B", "Qwen3-32B", "Llama-3.1-8B-Instruct"], ready_after_s=1.0)
        config = parse_config({
            "hosts": {"CT129": {**sim.host_config(), "gpus": "2x NVIDIA RTX A6000"}},
            "policy": {"approvers": ["UDEMO"], "min_margin_gib": 1.0},
            "slack": {"excerpt_interval_s": 0.5, "excerpt_max_lines": 6},
        }, "demo config")
        store = Store(root / "deploybot.sqlite3")
        pipeline = Pipeline(config, store, secrets=Secrets(),
                            approver=ConsoleApprover(console, assume_yes=True, interactive=False))
        ok = True
        try:
            console.print(Rule(f"1. healthy launch: {HEALTHY_REQUEST!r}"))
            started = time.perf_counter()
            thread = TeeThread(console)
            healthy = await pipeline.handle_text(HEALTHY_REQUEST, thread, Requester(user="demo"))
            console.print(f"[bold]outcome:[/] {healthy.state} (exit code {healthy.exit_code}) "
                          f"in {time.perf_counter() - started:.1f} s")
            ok &= healthy.state == "ready"
            await pipeline.handle_text("stop Qwen3.6-27B on CT129", ConsoleThread(console), Requester(user="demo"))

            console.print(Rule(f"2. a crash: {CRASH_REQUEST!r} (the engine replays a real SGLang crash log)"))
            sim.set_scenario(CRASH_SCENARIO)
            thread = TeeThread(console)
            crashed = await pipeline.handle_text(CRASH_REQUEST, thread, Requester(user="demo"))
            console.print(f"[bold]outcome:[/] {crashed.state} (exit code {crashed.exit_code})")
            ok &= crashed.state == "crashed"

        finally:
            sim.terminate_processes()
            await pipeline.close()
            store.close()
        console.print(Rule("demo " + ("passed" if ok else "FAILED")))
        return 0 if ok else 1
