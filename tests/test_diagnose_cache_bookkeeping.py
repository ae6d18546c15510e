"""An assertion in the KV cache's own bookkeeping (SGLang's radix tree, its LRU lists, HiCache's load-back) is an engine
bug, not the KV cache failing to fit; a failure in the pool's allocation at start still is the KV cache. Written
fresh with frames of sglang/srt/mem_cache/ (radix_cache.py, memory_pool.py) and messages of our own. A worker that
raised before it died (vLLM relays its error) died of that error, not of a kill from outside; a KeyError of a
run-time helper in vllm/config/ is not a refused setting, an error of its checks is.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_SITE = "/opt/venv/lib/python3.12/site-packages/sglang/srt"


def _traceback(frames: list[tuple[str, str, str]], last: str) -> str:
    lines = ["[2026-12-03 09:40:00 TP0] Scheduler hit an exception: Traceback (most recent call last):"]
    for path, function, code in frames:
        lines += [f'  File "{_SITE}/{path}", line 412, in {function}', f"    {code}"]
    return "\n".join(lines + [last])


@pytest.mark.parametrize("last", [
    "AssertionError: LRU list out of order: node 812 before node 640",
    "AssertionError",
    "KeyError: 4711",
])
def test_an_assertion_in_the_caches_bookkeeping_is_an_engine_bug(last: str) -> None:
    log = _traceback([("managers/scheduler.py", "get_next_batch_to_run", "self.tree_cache.evict(num_tokens)"),
                      ("mem_cache/radix_cache.py", "evict", "self._check_lru(node)"),
                      ("mem_cache/radix_cache.py", "_check_lru", "assert node.id == lru.id")], last)
    result = diagnose(log, engine="sglang")
    assert result.category == "other", result


def test_a_failure_allocating_the_pool_at_start_is_still_the_kv_cache() -> None:
    log = _traceback([("model_executor/model_runner.py", "init_memory_pool", "self.token_to_kv_pool = Pool("),
                      ("mem_cache/memory_pool.py", "__init__", "self._create_buffers()"),
                      ("mem_cache/memory_pool.py", "_create_buffers", "self.k_buffer = [torch.zeros("),
                      ], "RuntimeError: the pool could not be created with the memory left")
    result = diagnose(log, engine="sglang")
    assert result.category == "kv_cache_insufficient", result


# vLLM's executor relays a worker's own error before the worker goes (vllm/v1/executor/multiproc_executor.py
# get_response) and then notices the process is gone; written fresh in that order with a message of our own.
def test_a_worker_that_raised_before_it_died_was_not_killed_from_outside() -> None:
    log = ("(EngineCore_DP0 pid=808) ERROR 12-03 09:50:01 [core.py:936] RuntimeError: Worker failed with error "
           "'the device queue could not be created (out of handles)', please check the stack trace above for the "
           "root cause\n"
           "(EngineCore_DP0 pid=808) ERROR 12-03 09:50:07 [multiproc_executor.py:231] Worker proc VllmWorker-1 died "
           "unexpectedly, shutting down executor.")
    result = diagnose(log, exit_code=1)
    assert result.category != "host_oom_killed", result
    assert "out of handles" in result.evidence[0].text
    assert "host_oom_killed" in result.alternatives


def test_a_worker_that_died_without_an_error_of_its_own_is_still_read_as_a_kill() -> None:
    log = ("(EngineCore_DP0 pid=808) INFO 12-03 09:50:01 [gpu_model_runner.py:2200] Model loading took 30.1 GiB\n"
           "(EngineCore_DP0 pid=808) ERROR 12-03 09:50:07 [multiproc_executor.py:231] Worker proc VllmWorker-1 died "
           "unexpectedly, shutting down executor.")
    assert diagnose(log, exit_code=1).category == "host_oom_killed"


# vllm/config/ holds run-time helpers as well as the settings' checks (written fresh with its helper's name,
# get_layers_from_vllm_config, and a layer name of our own)
def test_a_keyerror_of_a_config_helper_looking_a_layer_up_is_not_a_refused_setting() -> None:
    log = ("Traceback (most recent call last):\n"
           '  File "/opt/venv/lib/python3.12/site-packages/vllm/config/__init__.py", line 4120, in '
           "get_layers_from_vllm_config\n"
           "    return {name: forward_context[name] for name in layer_names}\n"
           "KeyError: 'model.layers.7.self_attn.attn'")
    assert diagnose(log, exit_code=1, engine="vllm").category != "bad_argument"


def test_an_error_raised_by_a_config_check_is_still_the_setting() -> None:
    log = ("Traceback (most recent call last):\n"
           '  File "/opt/venv/lib/python3.12/site-packages/vllm/config/scheduler.py", line 210, in __post_init__\n'
           "    self._verify_args()\n"
           '  File "/opt/venv/lib/python3.12/site-packages/vllm/config/scheduler.py", line 260, in _verify_args\n'
           "    raise ValueError(msg)\n"
           "ValueError: the scheduler's budget of 96 is below its floor of 128")
    assert diagnose(log, exit_code=1, engine="vllm").category == "bad_argument"
