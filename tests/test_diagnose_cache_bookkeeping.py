"""An assertion in the KV cache's own bookkeeping (SGLang's radix tree, its LRU lists, HiCache's load-back) is an engine
bug, not the KV cache failing to fit; a failure in the pool's allocation at start still is the KV cache. Written
fresh with frames of sglang/srt/mem_cache/ (radix_cache.py, memory_pool.py) and messages of our own.
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
