"""Two lines that say a process is gone without saying why, written fresh from the engines' sources.

vLLM's client monitor (v1/engine/core_client.py monitor_engine_cores, vLLM 0.11.0) logs "Engine core proc %s died
unexpectedly, shutting down client." whenever the engine process exits first, also at the end of an offline script
whose outputs were printed (vllm-project/vllm#28838, #32468): alone, the line is a kill or a harmless exit.
SGLang appends an advice block to a failed CUDA graph capture (model_executor/cuda_graph_runner.py
CUDA_GRAPH_CAPTURE_FAILED_MSG, 0.5.9; "recommonded ... perf loss" before): a tail cut below the exception still shows
the capture failed (sgl-project/sglang#6218)."""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_MONITOR = "ERROR 01-16 17:16:49 [core_client.py:605] Engine core proc EngineCore_DP0 died unexpectedly, shutting " \
           "down client."


def test_the_engine_monitor_line_alone_is_no_proof_of_a_crash() -> None:
    result = diagnose(_MONITOR)
    assert result.category == "none"
    assert result.alternatives == ["host_oom_killed"]
    assert result.confidence < 0.5
    assert any("dmesg" in step for step in result.next_steps)
    assert result.evidence and "died unexpectedly" in result.evidence[0].text


def test_a_process_known_to_be_gone_with_that_line_is_read_as_a_kill() -> None:
    # The pipeline's crash path (ended) and an exit status both say the engine died: the monitor line is its death.
    for result in (diagnose(_MONITOR, ended=True), diagnose(_MONITOR, exit_code=137)):
        assert result.category == "host_oom_killed"
        assert "none" in result.alternatives
        assert any("end of a script" in step and "harmless" in step for step in result.next_steps)


def test_the_line_after_a_start_up_is_still_read_as_a_kill() -> None:
    log = ("INFO 01-16 17:10:02 [api_server.py:1896] vLLM API server version 0.11.0\n"
           "INFO 01-16 17:10:40 [gpu_model_runner.py:2602] Model loading took 15.26 GiB and 12.1 seconds\n"
           + _MONITOR + "\n")
    result = diagnose(log)
    assert result.category == "host_oom_killed"
    assert result.alternatives == ["none"]


@pytest.mark.parametrize("block", [
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n",
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable cuda graph by --disable-cuda-graph. (Not recommonded. Huge perf loss)\n",
    "2. set --piecewise-cuda-graph-max-tokens to a smaller value (e.g., 512)\n"
    "3. disable Piecewise CUDA graph by unset --enable-piecewise-cuda-graph\n",
])
def test_sglang_s_capture_advice_block_alone_is_a_failed_capture(block: str) -> None:
    result = diagnose(block)
    assert result.category == "cuda_graph_oom"
    assert "other" in result.alternatives
    assert result.evidence and "disable" in result.evidence[0].text
    assert any("--cuda-graph-max-bs" in step or "--disable-cuda-graph" in step for step in result.next_steps)


def test_the_same_flags_in_a_healthy_start_up_are_not_a_capture_failure() -> None:
    # The flags themselves in a server_args dump or a warning are routine: only the numbered advice lines count.
    log = ("[2026-03-01 10:00:01] server_args=ServerArgs(disable_cuda_graph=False, enable_torch_compile=False)\n"
           "[2026-03-01 10:00:40] Capture cuda graph end. Time elapsed: 12.31 s. mem usage=1.20 GB.\n"
           "[2026-03-01 10:00:45] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
           "[2026-03-01 10:00:47] The server is fired up and ready to roll!\n")
    assert diagnose(log).category == "none"


def test_stats_after_the_executor_shut_down_are_not_a_server_serving() -> None:
    # vLLM V1's executor shuts down when a worker dies (v1/executor/multiproc_executor.py: "Worker proc %s died
    # unexpectedly, shutting down executor."); the API server's stats logger goes on printing (vllm-project/vllm
    # #23582: requests hang, throughput falls to 0). Not healthy, and not a harmless exit: the worker died.
    log = ("(EngineCore_0 pid=271) ERROR 08-25 12:24:19 [multiproc_executor.py:146] Worker proc VllmWorker-1 died "
           "unexpectedly, shutting down executor.\n"
           "(VllmWorker TP0 pid=405) INFO 08-25 12:24:19 [multiproc_executor.py:520] Parent process exited, "
           "terminating worker\n"
           "(APIServer pid=1) INFO 08-25 12:24:24 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
           "Avg generation throughput: 7599.4 tokens/s, Running: 46 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.8%\n")
    result = diagnose(log)
    assert result.category == "host_oom_killed"
    assert result.alternatives == ["other"]
