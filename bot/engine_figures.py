"""How a served model is doing, from the engine's own Prometheus `/metrics`, read on the host by the metrics agent
(bot/agents/metrics_agent.py) over the deployment's remote: running and queued requests, KV cache usage,
generation tok/s and the speculative accept rate.

The names come from the engines' sources, old and new spellings both:
- SGLang (sgl-project/sglang python/sglang/srt/metrics/collector.py; /metrics only with --enable-metrics, which the
  planner adds): sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage (0..1), sglang:gen_throughput
  (tok/s), sglang:spec_accept_rate (newer builds), sglang:spec_accept_length, sglang:generation_tokens_total.
- vLLM (vllm-project/vllm vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py; v0's vllm/engine/metrics.py):
  vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc (0..1; before it
  vllm:gpu_cache_usage_perc), vllm:generation_tokens_total (a counter: tok/s is its rate between two scrapes; v0
  also had the gauge vllm:avg_generation_throughput_toks_per_s), vllm:spec_decode_num_accepted_tokens_total /
  vllm:spec_decode_num_draft_tokens_total (their rate's ratio is the accept rate; v0: the gauge
  vllm:spec_decode_draft_acceptance_rate).
Parsed with prometheus_client's own text parser; several series of one name (data-parallel engines) are summed,
usage fractions take their maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from bot.probe import run_agent
from bot.remote import Remote, RemoteError

RUNNING = ("sglang:num_running_reqs", "vllm:num_requests_running")
QUEUED = ("sglang:num_queue_reqs", "vllm:num_requests_waiting")
KV_USAGE = ("sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
TPS_GAUGE = ("sglang:gen_throughput", "vllm:avg_generation_throughput_toks_per_s")
GEN_COUNTER = ("vllm:generation_tokens_total", "sglang:generation_tokens_total")
ACCEPT_RATE_GAUGE = ("sglang:spec_accept_rate", "vllm:spec_decode_draft_acceptance_rate")
ACCEPT_LENGTH_GAUGE = ("sglang:spec_accept_length",)
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
DRAFTED = "vllm:spec_decode_num_draft_tokens_total"
#: The metric families the agent sends back (sample names; a counter's family is its name without `_total`).
WANTED = sorted({*RUNNING, *QUEUED, *KV_USAGE, *TPS_GAUGE, *ACCEPT_RATE_GAUGE, *ACCEPT_LENGTH_GAUGE,
                 *(n.removesuffix("_total") for n in (*GEN_COUNTER, ACCEPTED, DRAFTED))})
READ_INTERVAL_S = 1.0


@dataclass(frozen=True)
class EngineFigures:
    running: float | None
    queued: float | None
    queued_before: float | None  # at the first of the two scrapes
    kv_usage: float | None  # 0..1
    tok_s: float | None
    accept_rate: float | None  # 0..1
    accept_length: float | None

    def summary(self) -> str:
        parts = []
        if self.running is not None:
            parts.append(f"{self.running:.0f} running")
        if self.queued is not None:
            parts.append(f"{self.queued:.0f} queued")
        if self.kv_usage is not None:
            parts.append(f"KV cache {self.kv_usage:.0%}")
        if self.tok_s is not None:
            parts.append(f"{self.tok_s:.1f} tok/s")
        if self.accept_rate is not None:
            parts.append(f"spec accept {self.accept_rate:.0%}")
        elif self.accept_length is not None:
            parts.append(f"spec accept length {self.accept_length:.2f}")
        return ", ".join(parts) or "no known figures in the engine's /metrics"

    def trouble(self) -> str | None:
        """What an operator should hear about now: requests waiting while nothing is generated."""
        if self.queued and self.queued > 0 and self.tok_s is not None and self.tok_s <= 0:
            return f"{self.queued:.0f} requests wait and the engine generates nothing (0 tok/s)"
        return None


def _samples(text: str) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append(float(sample.value))
    return found


def _first(found: dict[str, list[float]], names: tuple[str, ...], combine=sum) -> float | None:
    for name in names:
        if found.get(name):
            return float(combine(found[name]))
    return None


def figures_from(text_a: str, text_b: str, dt: float) -> EngineFigures:
    """The figures of two scrapes `dt` seconds apart (gauges from the second; counters as rates between them)."""
    a, b = _samples(text_a), _samples(text_b)
    tok_s = _first(b, TPS_GAUGE)
    if tok_s is None:
        before, after = _first(a, GEN_COUNTER), _first(b, GEN_COUNTER)
        if before is not None and after is not None and dt > 0:
            tok_s = max(0.0, after - before) / dt
    accept_rate = _first(b, ACCEPT_RATE_GAUGE, max)
    if accept_rate is None and _first(b, (DRAFTED,)):
        drafted = (_first(b, (DRAFTED,)) or 0) - (_first(a, (DRAFTED,)) or 0)
        accepted = (_first(b, (ACCEPTED,)) or 0) - (_first(a, (ACCEPTED,)) or 0)
        if drafted <= 0:  # nothing drafted between the scrapes: the rate since the start
            drafted, accepted = _first(b, (DRAFTED,)) or 0, _first(b, (ACCEPTED,)) or 0
        accept_rate = accepted / drafted if drafted > 0 else None
    return EngineFigures(running=_first(b, RUNNING), queued=_first(b, QUEUED), queued_before=_first(a, QUEUED),
                         kv_usage=_first(b, KV_USAGE, max), tok_s=tok_s, accept_rate=accept_rate,
                         accept_length=_first(b, ACCEPT_LENGTH_GAUGE, max))


async def read_figures(remote: Remote, python: str, ports: list[int], *,
                       interval_s: float = READ_INTERVAL_S) -> dict[int, EngineFigures | str]:
    """Each port's figures, or why there are none (one round trip for all the host's servers)."""
    if not ports:
        return {}
    try:
        answer = await run_agent(remote, python, "metrics_agent",
                                 {"ports": ports, "names": WANTED, "interval_s": interval_s}, timeout=30)
    except RemoteError as exc:
        return {port: f"could not read the engine's /metrics: {exc}" for port in ports}
    result: dict[int, EngineFigures | str] = {}
    for port in ports:
        entry = answer.get(str(port)) or {"error": "no answer from the agent"}
        if "error" in entry:
            result[port] = str(entry["error"])
            continue
        try:
            result[port] = figures_from(entry["a"], entry["b"], float(entry["dt"]))
        except ValueError as exc:  # the parser's word for text that is not the exposition format
            result[port] = f"the engine's /metrics did not parse ({exc})"
    return result


async def ready_figures(remote: Remote, python: str, deployments: list) -> dict[str, EngineFigures | str]:
    """The figures of a host's ready deployments, by deployment id (the others have no engine serving yet)."""
    ready = [d for d in deployments if d.state == "ready"]
    by_port = await read_figures(remote, python, sorted({d.port for d in ready}))
    return {d.id: by_port[d.port] for d in ready if d.port in by_port}


def figures_line(figures: EngineFigures | str) -> str:
    if isinstance(figures, str):
        return f"engine figures unavailable: {figures}"
    trouble = figures.trouble()
    return f"live: {figures.summary()}" + (f"\n    ⚠️ {trouble}" if trouble else "")
