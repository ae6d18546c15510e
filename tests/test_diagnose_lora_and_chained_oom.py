"""LoRA turned on for a model class without LoRA support is the launch's --enable-lora; transformers shipping a
config class an older engine registers itself is transformers too new; a CUDA OOM chained into the engine core's
serving loop ("The above exception was the direct cause ...", then run_busy_loop), or logged before its own
traceback through the worker's execute_model, struck while serving.

Written fresh in vLLM's own wordings (vllm/model_executor/model_loader: "Model X does not support LoRA, but LoRA is
enabled."; transformers' AutoConfig.register: "'x' is already used by a Transformers config, pick another name.";
vllm/v1/engine/core.py run_engine_core -> run_busy_loop) with names of our own.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose


@pytest.mark.parametrize("line", [
    "ValueError: Model FooForCausalLM does not support LoRA, but LoRA is enabled. Support for this model may be added "
    "in the future. If this is important to you, please open an issue on github.",
    "AssertionError: FooVLForConditionalGeneration does not support LoRA yet.",
])
def test_lora_on_for_a_model_without_lora_support_is_the_flag(line: str) -> None:
    result = diagnose(f"[rank0]: {line}", exit_code=1)
    assert result.category == "bad_argument", result
    assert any("without --enable-lora" in step for step in result.next_steps)


def test_a_config_class_transformers_already_ships_is_transformers_too_new() -> None:
    result = diagnose("ValueError: 'foonet' is already used by a Transformers config, pick another name.", exit_code=1)
    assert result.category == "other" and "newer" in result.cause, result


_PREFIX = "(EngineCore_DP0 pid=8402) ERROR 12-03 10:00:00 [core.py:710] "


def test_an_oom_chained_into_the_serving_loop_struck_while_serving() -> None:
    body = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 960.00 MiB. GPU 0 has a total capacity of "
            "79.14 GiB of which 712.75 MiB is free.", "",
            "The above exception was the direct cause of the following exception:", "",
            "Traceback (most recent call last):",
            '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 701, in run_engine_core',
            "    engine_core.run_busy_loop()"]
    result = diagnose("\n".join(_PREFIX + line for line in body), exit_code=1)
    assert result.category == "other" and "while serving" in result.cause, result


def test_an_oom_without_a_chained_traceback_keeps_the_unknown_phase_reading() -> None:
    result = diagnose(_PREFIX + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 960.00 MiB.",
                      exit_code=1)
    assert result.category == "gpu_oom_weights", result


def test_an_oom_logged_before_its_own_traceback_is_placed_by_that_traceback() -> None:
    # (vLLM's worker logs the message, then its traceback: vllm/v1/executor/multiproc_executor.py worker_busy_loop)
    prefix = "(Worker_TP0 pid=1162) ERROR 12-03 10:05:00 [multiproc_executor.py:671] "
    body = ["RuntimeError: NPU out of memory. Tried to allocate 11.50 GiB (NPU 0; 60.97 GiB total capacity)",
            "Traceback (most recent call last):",
            '  File "/opt/venv/lib/python3.11/site-packages/vllm/v1/executor/multiproc_executor.py", line 666, in '
            "worker_busy_loop",
            "    output = func(*args, **kwargs)",
            '  File "/opt/venv/lib/python3.11/site-packages/vllm_ascend/worker/worker_v1.py", line 254, in '
            "execute_model",
            "    output = self.model_runner.execute_model(scheduler_output)"]
    result = diagnose("\n".join(prefix + line for line in body), exit_code=1)
    assert result.category == "other" and "while serving" in result.cause, result


def test_the_profiles_sampler_warm_up_running_out_asks_for_fewer_sequences() -> None:
    # vLLM's own message (v1/worker/gpu_model_runner.py _dummy_sampler_run), with a count of our own
    line = ("RuntimeError: CUDA out of memory occurred when warming up sampler with 768 dummy requests. Please try "
            "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")
    result = diagnose(line, exit_code=1, engine="vllm")
    assert result.category == "kv_cache_insufficient", result
    assert "--max-num-seqs 384" in result.next_steps[0]
    assert result.fix is None or result.fix.overrides.extra_args == ["--max-num-seqs", "384"]
    # the launch's own setting is replaced, whichever way it was spelled
    for spelled in ("--max-num-seqs 768", "--max-num-seqs=768"):
        launched = diagnose(line, exit_code=1, engine="vllm", command=f"vllm serve /models/q {spelled}")
        assert launched.fix is not None and launched.fix.overrides.remove_args == ["--max-num-seqs"], spelled
