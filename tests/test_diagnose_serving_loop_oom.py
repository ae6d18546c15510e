"""A CUDA OOM that the serving loop's end reports is an OOM while serving, not the weights not fitting.

vLLM raises these only once its engine serves: V1's EngineDeadError, V0's MQEngineDeadError ("Engine loop is not
running. Inspect the stacktrace to find the original error: ..."), V0 AsyncLLMEngine's "Background loop has errored
already" and the done callback of its request loop (vllm/engine/async_llm_engine.py ``_log_task_completion``).
The request handlers' modules (vllm/entrypoints/openai/serving_chat.py, ...) log only for a request. Lines below are
in vLLM 0.7/0.8's wording.
"""

from __future__ import annotations

from bot.diagnose import diagnose

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 318.00 MiB. GPU 0 has a total capacity of "
       "23.53 GiB of which 315.44 MiB is free. Including non-PyTorch memory, this process has 23.20 GiB memory in use.")


def test_an_oom_quoted_by_the_dead_engine_loop_is_a_serving_oom() -> None:
    log = ("ERROR 03-19 10:55:18 [serving_chat.py:677] vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is "
           "not running. Inspect the stacktrace to find the original error: OutOfMemoryError('CUDA out of memory. "
           "Tried to allocate 128.00 MiB. GPU 0 has a total capacity of 79.33 GiB of which 16.00 MiB is free.')\n")
    diagnosis = diagnose(log)
    assert diagnosis.category == "other" and "while serving" in diagnosis.cause, diagnosis


def test_an_oom_the_request_loop_callback_reports_is_a_serving_oom() -> None:
    log = "\n".join([
        f"ERROR 03-31 15:19:44 [async_llm_engine.py:68] {OOM}",
        "Exception in callback _log_task_completion(error_callback=<bound method...>)(<Task finished>) at "
        "/opt/venv/lib/python3.10/site-packages/vllm/engine/async_llm_engine.py:48",
        "Traceback (most recent call last):",
    ])
    diagnosis = diagnose(log)
    assert diagnosis.category == "other" and "while serving" in diagnosis.cause, diagnosis


def test_the_same_oom_with_nothing_of_the_serving_loop_stays_a_start_up_oom() -> None:
    assert diagnose(f"ERROR 03-31 15:19:44 [worker.py:68] {OOM}\n").category == "gpu_oom_weights"


def test_an_oom_under_the_offline_progress_bar_is_a_serving_oom() -> None:
    # vllm/entrypoints/llm.py _run_engine: the tqdm bar "Processed prompts" starts once LLM(...) is built, so an OOM
    # that the bar's line follows struck in generate(), not in loading (DeepSeek-OCR#91's shape, lines written fresh).
    log = "\n".join([
        '[rank0]:   File "/work/encoder.py", line 309, in forward',
        "[rank0]:     attn_bias = (rel_h + rel_w).view(B, heads, -1)",
        f"[rank0]: {OOM}",
        "Processed prompts:   0%|          | 0/5 [00:00<?, ?it/s, est. speed input: 0.00 toks/s]",
    ])
    diagnosis = diagnose(log)
    assert diagnosis.category == "other" and "while serving" in diagnosis.cause, diagnosis


def test_an_oom_the_async_output_handler_reports_is_a_serving_oom() -> None:
    # vllm/v1/engine/async_llm.py starts its output handler after the engine core reported ready.
    log = "\n".join([
        f"(EngineCore pid=112) ERROR 05-01 14:39:06 [core.py:1131] {OOM}",
        "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] AsyncLLM output_handler failed.",
        "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] Traceback (most recent call last):",
    ])
    diagnosis = diagnose(log)
    assert diagnosis.category == "other" and "while serving" in diagnosis.cause, diagnosis


def test_an_oom_in_a_requests_prompt_logprobs_is_a_serving_oom() -> None:
    log = "\n".join([
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 4308, in '
        "_get_prompt_logprobs_dict",
        "    logprobs = self.sampler.compute_logprobs(logits)",
        OOM,
    ])
    diagnosis = diagnose(log)
    assert diagnosis.category == "other" and "while serving" in diagnosis.cause, diagnosis


def test_an_oom_while_the_ascend_runner_prepares_requests_is_a_serving_oom() -> None:
    # vllm-ascend worker/model_runner_v1.py: execute_model -> _process_reqs (its dummy runs do not call it)
    log = "\n".join([
        '  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 988, in _process_reqs',
        "    self.attn_mask = self._make_attention_mask(",
        "RuntimeError: NPU out of memory. Tried to allocate 23.16 GiB (NPU 3; 60.96 GiB total capacity; 53.27 GiB "
        "already allocated)",
    ])
    diagnosis = diagnose(log)
    assert diagnosis.category == "other" and "while serving" in diagnosis.cause, diagnosis
