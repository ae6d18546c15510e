"""The engines' /metrics read into figures, for each generation of their names (texts shaped as the engines'
collectors print them: HELP/TYPE lines, labels, counters with `_total`; see bot/engine_figures.py for the
sources). The integration tests (tests/test_metrics.py) read the simulated engines through a host."""

from __future__ import annotations

import pytest

from bot.engine_figures import WANTED, figures_from


def family(name: str, kind: str, samples: list[tuple[str, float]]) -> str:
    lines = [f"# HELP {name} x", f"# TYPE {name} {kind}"]
    sample = f"{name}_total" if kind == "counter" else name
    lines += [f"{sample}{{{labels}}} {value}" for labels, value in samples]
    return "\n".join(lines) + "\n"


M = 'model_name="m"'


def sglang(running: float, queued: float, usage: float, tps: float, generated: float, *, rate: float | None = None,
           length: float | None = None) -> str:
    text = (family("sglang:num_running_reqs", "gauge", [(M, running)])
            + family("sglang:num_queue_reqs", "gauge", [(M, queued)])
            + family("sglang:token_usage", "gauge", [(M, usage)])
            + family("sglang:gen_throughput", "gauge", [(M, tps)])
            + family("sglang:generation_tokens", "counter", [(M, generated)]))
    if rate is not None:
        text += family("sglang:spec_accept_rate", "gauge", [(M, rate)])
    if length is not None:
        text += family("sglang:spec_accept_length", "gauge", [(M, length)])
    return text


def test_sglang_gauges_and_the_newer_accept_rate() -> None:
    got = figures_from(sglang(4, 1, 0.2, 99.0, 100), sglang(5, 0, 0.31, 120.5, 200, rate=0.64, length=2.9), 1.0)
    assert (got.running, got.queued, got.queued_before) == (5, 0, 1)
    assert got.kv_usage == pytest.approx(0.31) and got.tok_s == pytest.approx(120.5)  # the engine's own gauge
    assert got.accept_rate == pytest.approx(0.64)
    assert got.summary() == "5 running, 0 queued, KV cache 31%, 120.5 tok/s, spec accept 64%"


def test_older_sglang_has_only_the_accept_length() -> None:
    got = figures_from(sglang(1, 0, 0.1, 40, 0, length=2.4), sglang(1, 0, 0.1, 41, 0, length=2.4), 1.0)
    assert got.accept_rate is None and got.accept_length == pytest.approx(2.4)
    assert got.summary().endswith("spec accept length 2.40")


E0, E1 = 'engine="0",model_name="m"', 'engine="1",model_name="m"'


def vllm_v1(generated: float, drafted: float, accepted: float, *, kv_name: str = "vllm:kv_cache_usage_perc") -> str:
    return (family("vllm:num_requests_running", "gauge", [(E0, 2), (E1, 3)])  # two data-parallel engines
            + family("vllm:num_requests_waiting", "gauge", [(E0, 0), (E1, 1)])
            + family(kv_name, "gauge", [(E0, 0.25), (E1, 0.4)])
            + family("vllm:generation_tokens", "counter", [(E0, generated / 2), (E1, generated / 2)])
            + family("vllm:spec_decode_num_drafts", "counter", [(E0, drafted / 3)])
            + family("vllm:spec_decode_num_draft_tokens", "counter", [(E0, drafted)])
            + family("vllm:spec_decode_num_accepted_tokens", "counter", [(E0, accepted)]))


@pytest.mark.parametrize("kv_name", ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"])
def test_vllm_rates_come_from_two_scrapes(kv_name: str) -> None:
    got = figures_from(vllm_v1(1000, 300, 200, kv_name=kv_name), vllm_v1(1090, 390, 260, kv_name=kv_name), 2.0)
    assert (got.running, got.queued) == (5, 1)  # summed over the engines
    assert got.kv_usage == pytest.approx(0.4)  # the fullest engine
    assert got.tok_s == pytest.approx(45.0)  # (1090 - 1000) / 2 s
    assert got.accept_rate == pytest.approx(60 / 90)  # between the scrapes, not since the start


def test_vllm_nothing_drafted_between_the_scrapes_uses_the_rate_since_the_start() -> None:
    got = figures_from(vllm_v1(1000, 300, 150), vllm_v1(1000, 300, 150), 1.0)
    assert got.tok_s == 0 and got.accept_rate == pytest.approx(0.5)


def test_vllm_v0_gauges() -> None:
    text = (family("vllm:num_requests_running", "gauge", [(M, 1)])
            + family("vllm:num_requests_waiting", "gauge", [(M, 7)])
            + family("vllm:gpu_cache_usage_perc", "gauge", [(M, 0.93)])
            + family("vllm:avg_generation_throughput_toks_per_s", "gauge", [(M, 0.0)])
            + family("vllm:spec_decode_draft_acceptance_rate", "gauge", [(M, 0.7)]))
    got = figures_from(text, text, 1.0)
    assert (got.kv_usage, got.tok_s, got.accept_rate) == (0.93, 0.0, 0.7)
    assert got.trouble() == "7 requests wait and the engine generates nothing (0 tok/s)"


def test_no_known_names_say_so_and_bad_text_raises() -> None:
    assert figures_from("other_metric 1\n", "other_metric 1\n", 1.0).summary() == \
        "no known figures in the engine's /metrics"
    with pytest.raises(ValueError):
        figures_from("vllm:num_requests_running{ 1 2 3\n", "", 1.0)


def test_the_agent_asks_for_families_not_samples() -> None:
    assert "vllm:generation_tokens" in WANTED and "vllm:generation_tokens_total" not in WANTED
    assert {"sglang:num_running_reqs", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"} <= set(WANTED)


def test_the_simulated_engines_metrics_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulated engines' /metrics text, through the same reading: spec decoding included, values moving."""
    import sys
    from pathlib import Path

    import bot.simhost

    monkeypatch.syspath_prepend(str(Path(bot.simhost.__file__).parent / "hostlib"))
    monkeypatch.delitem(sys.modules, "simengine", raising=False)
    from simengine.exposition import sglang_text, vllm_text
    from simengine.load import SimLoad

    load = SimLoad({"running": 2, "queued": 1, "tok_s": 1000.0}, kv_tokens=10000, spec_tokens=3, accept_length=2.8)
    first = load.snapshot()
    with load.request(prompt_tokens=8, completion_tokens=2):
        during = load.snapshot()
    load._last -= 10.0  # ten seconds of simulated traffic pass
    later = load.snapshot()
    assert during.running == 3 and later.running == 2 and later.generation_tokens > first.generation_tokens
    for a, b in ((vllm_text(first, "m", (0, 11, 0), speculative=True), vllm_text(later, "m", (0, 11, 0),
                                                                                  speculative=True)),
                 (sglang_text(first, "m", speculative=True), sglang_text(later, "m", speculative=True))):
        got = figures_from(a, b, 1.0)
        assert (got.running, got.queued) == (2, 1) and 0 < got.kv_usage < 1
        assert got.accept_rate == pytest.approx(1.8 / 3, rel=0.05)


async def test_the_terminal_shows_engine_load_with_its_trouble() -> None:
    import io

    from rich.console import Console

    from bot.events import EngineLoad
    from handlers.console import ConsoleThread

    out = io.StringIO()
    await ConsoleThread(Console(file=out, width=200)).emit(
        EngineLoad(summary="0 running, 4 queued, 0.0 tok/s", trouble="4 requests wait and the engine generates nothing"))
    assert "live 0 running, 4 queued, 0.0 tok/s ⚠️ 4 requests wait" in out.getvalue()
