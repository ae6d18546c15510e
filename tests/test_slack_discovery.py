"""Discovery under `serve`: every host is probed at start (on the story loop, so acks never wait for it), and a
model copied onto a host afterwards is found by the next /deploy that names it: acked at once, one probe, then
the usual thread to ready. The harness is test_slack_app's (signed requests, the local Slack server)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from tests.test_slack_app import HOST, MODEL, HarnessFactory, make_bot  # noqa: F401 - the fixture


async def test_serve_learns_the_models_at_start_and_finds_a_folder_copied_later(make_bot: HarnessFactory) -> None:
    bot = await make_bot(host={"models": None, "gpus": None})  # app.yaml lists no models
    await until(lambda: HOST in bot.store.host_views_sync(), "the start-up probe of every host")
    assert MODEL in bot.service.pipeline.inventory().hosts[HOST].models
    assert bot.service.pipeline.inventory().hosts[HOST].gpu_count == 2  # from the probe: app.yaml has no gpus

    assert "Mistral-7B-Instruct-v0.3" not in bot.service.pipeline.inventory().hosts[HOST].models
    bot.sim.add_model("Mistral-7B-Instruct-v0.3")
    answer, thread_ts = await bot.deployed(f"start Mistral-7B-Instruct-v0.3 on {HOST}")
    assert answer.status == 200 and not answer.body.strip()  # a plain ack: the probe came after it
    [dep] = bot.deployments()
    assert dep.model == "Mistral-7B-Instruct-v0.3" and dep.state == "ready"
    assert dep.plan.model_path == str(bot.sim.models_dir / "Mistral-7B-Instruct-v0.3")


async def until(predicate: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    """Poll for work of the story loop that calls no Slack method (FakeSlack.wait_for wakes on calls only)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.05)
