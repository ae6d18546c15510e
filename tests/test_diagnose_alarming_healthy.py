"""Healthy starts that carry alarming lines stay healthy, wherever in the tail the line falls.

Each alarming line is the engine's or library's own text (source named per line); the start around it is a real
start's milestones (tests/data/engines/*-log-lines.md). The line is put before the ready line (where engines print
it) and after it (where a second process's output lands when several processes share one log).
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

VLLM_START = """\
INFO 11-01 10:00:00 [api_server.py:1000] vLLM API server version 0.11.0
INFO 11-01 10:00:10 [gpu_model_runner.py:2000] Starting to load model /models/Qwen3-8B...
INFO 11-01 10:00:30 [gpu_model_runner.py:2050] Model loading took 7.6 GiB and 18.2 seconds
INFO 11-01 10:00:40 [kv_cache_utils.py:1000] GPU KV cache size: 300,000 tokens"""
VLLM_READY = """\
INFO 11-01 10:01:00 [api_server.py:1900] Starting vLLM API server 0 on http://0.0.0.0:8000
INFO:     Application startup complete."""
SGLANG_START = """\
[2025-11-01 10:00:00] server_args=ServerArgs(model_path='/models/Qwen3-8B', tp_size=2, port=30000)
[2025-11-01 10:00:30 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=70.1 GB, mem usage=7.9 GB.
[2025-11-01 10:00:31 TP0] KV Cache is allocated. #tokens: 500000, K size: 30 GB, V size: 30 GB"""
SGLANG_READY = """\
[2025-11-01 10:00:50] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2025-11-01 10:00:55] The server is fired up and ready to roll!"""

ALARMING = (
    # Python's warnings module (warnings.formatwarning), torch/cuda/__init__.py on importing pynvml
    "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is "
    "deprecated. Please install nvidia-ml-py instead. If you did not install pynvml directly, please report this to "
    "the pytorch team.",
    # vllm/utils set_ulimit: names the error it may lead to
    "WARNING 11-01 10:00:00 [utils.py:100] Found ulimit of 1024 and failed to automatically increase with error "
    "current limit exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many open "
    "files`. Consider increasing with ulimit -n",
    # torch c10d's client retrying its store connection (torch/csrc/distributed/c10d/socket.cpp)
    "[W1101 10:00:00.000000000 socket.cpp:697] [c10d] The client socket has failed to connect to [localhost]:29500 "
    "(errno: 99 - Cannot assign requested address).",
    # sglang/srt/models/registry.py import_model_classes
    "[2025-11-01 10:00:00] Ignore import error when loading sglang.srt.models.glm4v_moe: No module named "
    "'transformers.models.glm4v_moe'",
    # vllm model_executor/layers/fused_moe/fused_moe.py get_moe_configs
    "WARNING 11-01 10:00:00 [fused_moe.py:700] Using default MoE config. Performance might be sub-optimal! Config "
    "file not found at /vllm/model_executor/layers/fused_moe/configs/E=128,N=768,device_name=NVIDIA_H200.json",
    # vllm v1/sample/ops/topk_topp_sampler.py
    "WARNING 11-01 10:00:00 [topk_topp_sampler.py:60] FlashInfer is not available. Falling back to the PyTorch-native "
    "implementation of top-p & top-k sampling. For the best performance, please install FlashInfer.",
    # torch.distributed's ProcessGroupNCCL destructor at exit
    "[rank0]:[W1101 10:00:00.000000 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed "
    "before we destruct ProcessGroupNCCL.",
    # cpuinfo on ARM hosts (pytorch/cpuinfo src/arm/linux/aarch64-isa.c)
    "Error in cpuinfo: prctl(PR_SVE_GET_VL) failed",
)


@pytest.mark.parametrize("line", ALARMING)
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("where", ["before_ready", "after_ready"])
def test_an_alarming_line_on_a_healthy_start_is_not_a_crash(line: str, engine: str, where: str) -> None:
    start, ready = (VLLM_START, VLLM_READY) if engine == "vllm" else (SGLANG_START, SGLANG_READY)
    log = f"{start}\n{line}\n{ready}" if where == "before_ready" else f"{start}\n{ready}\n{line}"
    result = diagnose(log)
    assert result.category == "none", (result.category, result.cause)


def test_the_same_error_without_the_warnings_hedge_is_still_read() -> None:
    # The warning is excluded for its hedge ("can cause"), not for its words: the real failure still counts.
    log = f"{VLLM_START}\nOSError: [Errno 24] Too many open files: '/proc/self/fd'"
    assert diagnose(log, exit_code=1).category == "other"
    assert "file descriptors" in diagnose(log, exit_code=1).cause
