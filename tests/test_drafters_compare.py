"""`compare` (issue 16): two plans on the simulated host over a REAL sshd, one after the other, each under the same
bounded load, each stopped before the next starts; one table side by side. Plus the pieces: reading a compare text,
the percentiles and the speed-up column."""

from __future__ import annotations

from bot.compare import compare, compare_requests, render
from bot.config import Secrets
from bot.events import Launched, RecordingThread
from bot.inventory import Inventory, InventoryHost
from bot.loadtest import LevelResult, LoadReport, percentile, table
from bot.models import DeployRequest, ParseError
from bot.pipeline import Pipeline, Requester
from bot.store import Store
from tests.procs import pid_alive
from tests.test_drafters_ssh import DFLASH, _config, drafthost  # noqa: F401 (the fixture)

INVENTORY = Inventory(hosts={"CT129": InventoryHost(name="CT129", models=["Qwen3.6-27B", DFLASH], gpu_count=2)})


def test_a_compare_text_reads_as_one_start_request_per_plan() -> None:
    got = compare_requests("compare stock MTP and the dflash drafter for Qwen3.6-27B on CT129", INVENTORY)
    assert got == [
        DeployRequest(action="start", model="Qwen3.6-27B", host="CT129", speculative="mtp"),
        DeployRequest(action="start", model="Qwen3.6-27B", host="CT129", speculative="dflash"),
    ]
    three = compare_requests("compare no speculation, stock MTP and our drafter for Qwen3.6-27B on CT129", INVENTORY)
    assert [r.speculative for r in three] == ["none", "mtp", "drafter"]  # type: ignore[union-attr]


def test_a_compare_text_that_does_not_read_changes_nothing_and_says_why() -> None:
    for text, kind in [
        ("compare stock MTP for Qwen3.6-27B on CT129", "invalid_value"),  # one plan is no comparison
        ("compare stock MTP and stock MTP for Qwen3.6-27B on CT129", "invalid_value"),
        ("compare stock MTP and the dflash drafter for Qwen3.6-27B on CT999", "unknown_host"),
        ("compare things", "not_understood"),
    ]:
        got = compare_requests(text, INVENTORY)
        assert isinstance(got, ParseError) and got.kind == kind and got.message, (text, got)


def test_percentiles_interpolate_and_the_speed_up_is_over_no_speculation() -> None:
    assert percentile([], 50) is None and percentile([7.0], 99) == 7.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert 3.9 < percentile([1.0, 2.0, 3.0, 4.0], 99) <= 4.0  # type: ignore[operator]

    def report(label: str, speculative: str, one: float, eight: float, accept: float | None) -> LoadReport:
        levels = [LevelResult(concurrency=c, requests=8, ok=8, tok_s=t, ttft_p50_ms=10, ttft_p99_ms=20,
                              itl_p50_ms=5, itl_p99_ms=9) for c, t in ((1, one), (8, eight))]
        return LoadReport(label=label, speculative=speculative, levels=levels, accept_length=accept)

    rows = table([report("stock MTP", "mtp", 60, 300, 2.4), report("none", "none", 40, 320, None)])
    assert rows[0][0] == "plan" and rows[1][0] == "stock MTP" and rows[2][0] == "none"
    assert rows[1][-1] == "1.50x/0.94x" and rows[2][-1] == "1.00x/1.00x"
    assert rows[1][5] == "2.40" and rows[2][5] == "-"


async def test_compare_runs_both_plans_in_turn_and_stops_both(sshd, drafthost, tmp_path):  # noqa: F811
    config = _config(sshd, drafthost, drafters={"Qwen3.6-27B": [DFLASH]})
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    thread = RecordingThread()
    try:
        requests = compare_requests("compare stock MTP and the dflash drafter for Qwen3.6-27B on CT129",
                                    pipeline.inventory())
        assert isinstance(requests, list)
        report = await compare(pipeline, requests, thread, Requester(user="U1"))
        assert [run.state for run in report.runs] == ["ready", "ready"], render(report)
        header, mtp, dflash = report.rows
        assert header[:3] == ["plan", "tok/s @1", "tok/s @8"]
        assert mtp[0] == "stock MTP" and dflash[0] == f"dflash drafter ({DFLASH})"
        for row in (mtp, dflash):
            assert float(row[1]) > 0 and float(row[2]) > 0  # output tok/s at 1 and 8 concurrent
            assert float(row[5]) > 1.0  # the engine's own accept length, read from /metrics after the load
        assert mtp[-1] == "1.00x/1.00x"  # no run without speculation: the first row is the base
        for run in report.runs:
            assert run.stopped and run.report is not None
            assert [lv.ok for lv in run.report.levels] == [lv.requests for lv in run.report.levels]
        launched = thread.of(Launched)
        assert len(launched) == 2
        assert not any(pid_alive(event.handle.pid) for event in launched)  # both servers were stopped
        states = [(await store.get_deployment(event.deployment_id)).state for event in launched]
        assert states == ["stopped", "stopped"]
        assert "stock MTP" in render(report) and "dflash drafter" in render(report)
        print("\n" + render(report))
    finally:
        await pipeline.close()
        store.close()
