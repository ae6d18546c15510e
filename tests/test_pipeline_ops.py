"""The operations surfaces call (bot/pipeline/ops.py) answer with structured reports, not text for one surface:
status names each deployment by its backend's handle label, logs and diagnose read the log through the backend,
a stop is the backend's confirmed report."""

from __future__ import annotations

from bot.events import Diagnosed, Info, LogExcerpt, RecordingThread
from bot.pipeline import Requester, StatusReport
from bot.pipeline.reports import LogTail
from tests.test_pipeline_local import ct129  # noqa: F401 - the fixture

MODEL = "Qwen3.6-27B"


async def test_ops_answer_with_reports_named_by_the_handle(ct129):  # noqa: F811
    sim, pipeline = ct129
    outcome = await pipeline.handle_text(f"start {MODEL} on CT129 port 30517", RecordingThread(), Requester(user="U0ALICE"))
    assert outcome.state == "ready", outcome.message
    dep = outcome.deployment
    report = await pipeline.status_report("CT129")
    assert isinstance(report, StatusReport)
    (host,) = report.hosts
    (row,) = host.deployments
    assert row.id == dep.id and row.where == dep.handle.label and row.requested_by == "U0ALICE"
    assert [g.index for g in host.gpus] == [0, 1] and host.error is None
    assert all(not dep.handle.holds_process(p.pid) for p in host.others)
    assert f"({row.state}, port {dep.port}, {dep.handle.label})" in report.text()

    tail = await pipeline.log_tail(dep)
    assert isinstance(tail, LogTail) and tail.error is None and tail.has_log
    assert any("fired up and ready" in line for line in tail.last(200))
    thread = RecordingThread()
    logs = await pipeline.deployment_logs(dep, thread, 5)
    (excerpt,) = thread.of(LogExcerpt)
    assert logs.state == "done" and len(excerpt.lines) == 5
    assert "\n".join(excerpt.lines) in open(dep.handle.log_path).read()  # the log's last lines, in order
    diagnosed = RecordingThread()
    await pipeline.diagnose_deployment(dep, diagnosed)
    (verdict,) = diagnosed.of(Diagnosed)
    assert verdict.diagnosis.category == "none"  # a healthy server's log

    done = await pipeline.stop_deployment(dep)
    assert done.stopped and done.confirmed and done.where == dep.handle.label
    assert f"{MODEL} on CT129 ({dep.handle.label}) stopped cleanly; port {dep.port} closed" in done.text()
    assert (await pipeline.store.get_deployment(dep.id)).state == "stopped"
    gone = RecordingThread()
    await pipeline.deployment_logs(dep.model_copy(update={"handle": None}), gone, 5)
    assert [e.message for e in gone.of(Info)] == [f"{MODEL} has no log yet"]
