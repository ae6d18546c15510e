"""Is the drafter worth it? A short, bounded load against a ready deployment (bot/agents/load_agent.py, run on the
host) at 1 and 8 concurrent requests: output tok/s, TTFT and inter-token latency p50/p99, and the engine's own
accept length / rate from /metrics right after (bot/engine_figures.py). Values, not text: surfaces render them.
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict, Field

from bot.engine_figures import EngineFigures, read_figures
from bot.probe import run_agent
from bot.remote import Remote

#: The concurrency levels of issue 16: one request alone (latency), eight at once (throughput).
LEVELS = (1, 8)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LevelResult(Frozen):
    concurrency: int
    requests: int
    ok: int
    errors: list[str] = Field(default_factory=list)
    tok_s: float | None = None  # output tokens per second over the level's wall time
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None


class LoadReport(Frozen):
    """One deployment under the bounded load."""

    label: str  # "Qwen3.6-27B, DFlash drafter Qwen3.6-27B-DFlash"
    speculative: str
    levels: list[LevelResult]
    accept_length: float | None = None
    accept_rate: float | None = None
    figures_error: str | None = None

    def level(self, concurrency: int) -> LevelResult | None:
        return next((lv for lv in self.levels if lv.concurrency == concurrency), None)


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation (statistics.quantiles' inclusive method)."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[min(98, max(0, round(q) - 1))]


def _level(raw: dict) -> LevelResult:
    ttft = [float(x) * 1000 for x in raw.get("ttft_s") or []]
    itl = [float(x) * 1000 for x in raw.get("itl_s") or []]
    wall = float(raw.get("wall_s") or 0)
    return LevelResult(
        concurrency=int(raw["concurrency"]),
        requests=int(raw["requests"]),
        ok=int(raw["ok"]),
        errors=[str(e) for e in raw.get("errors") or []],
        tok_s=(float(raw.get("output_tokens") or 0) / wall) if wall > 0 and raw.get("ok") else None,
        ttft_p50_ms=percentile(ttft, 50),
        ttft_p99_ms=percentile(ttft, 99),
        itl_p50_ms=percentile(itl, 50),
        itl_p99_ms=percentile(itl, 99),
    )


async def measure(
    remote: Remote, python: str, port: int, model: str, *, label: str, speculative: str,
    levels: tuple[int, ...] = LEVELS, requests_per_level: int = 8, max_tokens: int = 64,
) -> LoadReport:
    """Run the load on the host, then read the engine's accept figures (one more round trip)."""
    answer = await run_agent(
        remote, python, "load_agent",
        {"port": port, "model": model, "levels": list(levels), "requests_per_level": requests_per_level,
         "max_tokens": max_tokens, "timeout_s": 60},
        timeout=60 * len(levels) * 4,
    )  # fmt: skip
    results = [_level(raw) for raw in answer.get("levels") or []]
    figures = (await read_figures(remote, python, [port])).get(port)
    if isinstance(figures, EngineFigures):
        return LoadReport(label=label, speculative=speculative, levels=results,
                          accept_length=figures.accept_length, accept_rate=figures.accept_rate)  # fmt: skip
    return LoadReport(label=label, speculative=speculative, levels=results, figures_error=figures)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def table(reports: list[LoadReport]) -> list[list[str]]:
    """Rows of the side-by-side table (the header first), with the speed-up at 1 and 8 concurrent requests over
    the run without speculation (over the first row when none ran without)."""
    base = next((r for r in reports if r.speculative == "none"), reports[0] if reports else None)
    header = ["plan", "tok/s @1", "tok/s @8", "TTFT p50/p99 ms", "ITL p50/p99 ms", "accept len", "speed-up @1/@8"]
    rows = [header]
    for r in reports:
        one, eight = r.level(1), r.level(8)
        ups = []
        for mine, theirs in ((one, base.level(1) if base else None), (eight, base.level(8) if base else None)):
            ok = mine and theirs and mine.tok_s and theirs.tok_s
            ups.append(f"{mine.tok_s / theirs.tok_s:.2f}x" if ok else "-")  # type: ignore[union-attr,operator]
        accept = f"{r.accept_length:.2f}" if r.accept_length is not None else (
            f"rate {r.accept_rate:.0%}" if r.accept_rate is not None else "-")  # fmt: skip
        rows.append([
            r.label,
            f"{one.tok_s:.1f}" if one and one.tok_s else "-",
            f"{eight.tok_s:.1f}" if eight and eight.tok_s else "-",
            f"{_ms(one.ttft_p50_ms if one else None)}/{_ms(one.ttft_p99_ms if one else None)}",
            f"{_ms(one.itl_p50_ms if one else None)}/{_ms(one.itl_p99_ms if one else None)}",
            accept,
            "/".join(ups),
        ])  # fmt: skip
    return rows
