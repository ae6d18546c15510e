"""`deploybot serve` keeps acking while a diagnosis runs, and stops when asked, through the real Bolt app: its
diagnosis runs in a worker process (bot/diagnose/runner.py), never on the loop that answers Slack."""

from __future__ import annotations

import asyncio

from tests.test_bounded_diagnosis import _sleep_forever
from tests.test_slack_app import HarnessFactory, make_bot  # noqa: F401 (the fixture)
from tests.procs import pid_alive


async def test_acks_and_stop_while_a_diagnosis_is_stuck(make_bot: HarnessFactory) -> None:  # noqa: F811
    bot = await make_bot()
    runner = bot.service.pipeline.diagnoser
    assert runner.isolate  # serve's diagnoser is the worker process
    runner._target = _sleep_forever
    runner.deadline_s = 3600  # it will not answer by itself
    stuck = asyncio.ensure_future(runner.diagnose("RuntimeError: boom\n"))
    await asyncio.sleep(0.5)
    assert runner._pool is not None
    workers = [p.pid for p in runner._pool._pool]  # type: ignore[attr-defined]
    # Slack is still answered: help comes back in the ack itself.
    answer = await bot.deploy("help")
    assert answer.status == 200 and "deploy" in answer.json()["text"].lower()
    await bot.service.stop()  # what SIGTERM does in serve(): returns although the diagnosis never ended
    assert runner._pool is None and not any(pid_alive(pid) for pid in workers)
    stuck.cancel()
