"""`bench` on a ready deployment (issue 16, item 5) over a REAL sshd against the simulated host, the thread word that
asks for it, and `compare` reached from plain text (the console's and /deploy's path)."""

from __future__ import annotations

from bot.config import Secrets
from bot.events import Info, Launched, ParseFailed, RecordingThread
from bot.pipeline import Pipeline, Requester
from bot.store import Store
from handlers.slack.commands import ThreadCommand, parse_thread_command
from tests.test_drafters_ssh import DFLASH, _config, drafthost  # noqa: F401 (the fixture)


def test_bench_is_a_thread_word_without_a_count() -> None:
    assert parse_thread_command("bench") == ThreadCommand(name="bench")
    assert parse_thread_command("<@U0BOT> bench!") == ThreadCommand(name="bench")
    assert parse_thread_command("bench 8") is None  # only logs takes a number
    assert parse_thread_command("let's bench this later") is None  # people talk in threads too


async def test_bench_loads_a_ready_drafter_deployment_and_reports_its_figures(sshd, drafthost, tmp_path):  # noqa: F811
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(_config(sshd, drafthost, drafters={"Qwen3.6-27B": [DFLASH]}), store, secrets=Secrets())
    who = Requester(user="U1")
    try:
        started = await pipeline.handle_text("start Qwen3.6-27B on CT129 with the dflash drafter", RecordingThread(),
                                             who)
        assert started.state == "ready" and started.deployment is not None
        thread = RecordingThread()
        outcome = await pipeline.bench_deployment(started.deployment, thread)
        assert outcome.state == "done", outcome.message
        header, row = [line.split("  ")[0].strip() for line in outcome.message.splitlines()][:2]
        assert header == "plan" and row == f"Qwen3.6-27B, dflash drafter {DFLASH}"
        cells = [c for c in outcome.message.splitlines()[1].split("  ") if c.strip()]
        assert float(cells[1]) > 0 and float(cells[2]) > 0  # tok/s at 1 and at 8 concurrent
        assert float(cells[5]) > 1.0  # accept length from the engine's /metrics
        assert thread.of(Info)[-1].message == outcome.message
        assert [a["action"] for a in store.audit_rows_sync() if a["action"] == "bench"] == ["bench"]
        stop = await pipeline.handle_text("stop Qwen3.6-27B on CT129", RecordingThread(), who)
        assert stop.state == "stopped"
        dep = await store.get_deployment(started.deployment.id)
        refused = await pipeline.bench_deployment(dep, RecordingThread())
        assert refused.state == "failed" and "not ready" in refused.message
    finally:
        await pipeline.close()
        store.close()


async def test_a_compare_text_that_does_not_read_launches_nothing(sshd, drafthost, tmp_path):  # noqa: F811
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(_config(sshd, drafthost), store, secrets=Secrets())
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text("compare stock MTP for Qwen3.6-27B on CT129", thread, Requester("U1"))
        assert outcome.state == "bad_request" and "2 to 4 plans" in outcome.message
        assert thread.of(ParseFailed) and not thread.of(Launched)
        assert not list(drafthost.log_dir.glob("*.log"))
    finally:
        await pipeline.close()
        store.close()
