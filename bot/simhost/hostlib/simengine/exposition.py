"""The engines' `/metrics` in Prometheus text format, with the names the real engines use (standard library only:
the host's python may lack prometheus_client).

Names, from the engines' sources:
- SGLang, python/sglang/srt/metrics/collector.py (sgl-project/sglang; served only with --enable-metrics):
  sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage, sglang:gen_throughput,
  sglang:spec_accept_length, sglang:spec_accept_rate (newer builds), sglang:prompt_tokens_total,
  sglang:generation_tokens_total; label model_name.
- vLLM, vllm/v1/metrics/loggers.py and vllm/v1/spec_decode/metrics.py (vllm-project/vllm): vllm:num_requests_running,
  vllm:num_requests_waiting, vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before it, kept a while as
  deprecated), vllm:prompt_tokens_total, vllm:generation_tokens_total, vllm:spec_decode_num_drafts_total,
  vllm:spec_decode_num_draft_tokens_total, vllm:spec_decode_num_accepted_tokens_total; labels model_name, engine.
"""

from __future__ import annotations

from simengine.load import Snapshot

Sample = tuple[str, float]


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _family(name: str, kind: str, help_: str, value: float, labels: dict[str, str]) -> list[str]:
    sample = f"{name}_total" if kind == "counter" else name
    return [f"# HELP {name} {help_}", f"# TYPE {name} {kind}", f"{sample}{{{_labels(labels)}}} {float(value)!r}"]


def sglang_text(snap: Snapshot, model: str, *, speculative: bool, accept_rate_gauge: bool = True) -> str:
    labels = {"model_name": model}
    lines = (
        _family("sglang:num_running_reqs", "gauge", "The number of running requests.", snap.running, labels)
        + _family("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", snap.queued, labels)
        + _family("sglang:token_usage", "gauge", "The token usage.", round(snap.kv_usage, 4), labels)
        + _family("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", round(snap.tok_s, 2),
                  labels)
        + _family("sglang:prompt_tokens", "counter", "Number of prefill tokens processed.", snap.prompt_tokens,
                  labels)
        + _family("sglang:generation_tokens", "counter", "Number of generation tokens processed.",
                  round(snap.generation_tokens), labels)
    )
    if speculative:
        lines += _family("sglang:spec_accept_length", "gauge", "The average acceptance length of speculative "
                         "decoding.", round(snap.accept_length, 3), labels)
        if accept_rate_gauge:
            lines += _family("sglang:spec_accept_rate", "gauge", "Speculative acceptance rate.",
                             round(snap.accept_rate, 4), labels)
    return "\n".join(lines) + "\n"


def vllm_text(snap: Snapshot, model: str, version: tuple[int, ...], *, speculative: bool) -> str:
    labels = {"engine": "0", "model_name": model}
    lines = (
        _family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
                snap.running, labels)
        + _family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
                  snap.queued, labels)
    )
    if version < (0, 11):  # the old name, deprecated when kv_cache_usage_perc came and later dropped
        lines += _family("vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.",
                         round(snap.kv_usage, 4), labels)
    if version >= (0, 10):
        lines += _family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
                         round(snap.kv_usage, 4), labels)
    lines += (
        _family("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.", snap.prompt_tokens, labels)
        + _family("vllm:generation_tokens", "counter", "Number of generation tokens processed.",
                  round(snap.generation_tokens), labels)
    )
    if speculative:
        lines += (
            _family("vllm:spec_decode_num_drafts", "counter", "Number of spec decoding drafts.", round(snap.drafts),
                    labels)
            + _family("vllm:spec_decode_num_draft_tokens", "counter", "Number of draft tokens.",
                      round(snap.draft_tokens), labels)
            + _family("vllm:spec_decode_num_accepted_tokens", "counter", "Number of accepted tokens.",
                      round(snap.accepted_tokens), labels)
        )
    return "\n".join(lines) + "\n"
