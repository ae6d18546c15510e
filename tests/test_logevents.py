"""Healthy-path events from real SGLang and vLLM lines (quoted in shared/engines/*-log-lines.md), with the prefixes
real launchers add."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.logevents import (
    LOG_EVENT_ADAPTER,
    CudaGraphCaptured,
    DecodeStats,
    ErrorLine,
    KvCacheAllocated,
    LogReader,
    ServerReady,
    WeightsLoaded,
    WeightsProgress,
    detect_engine,
    is_ready_line,
    normalize_line,
)

CRASHLOGS = Path(__file__).resolve().parent / "data" / "crashlogs" / "dev"


def feed_all(reader: LogReader, text: str) -> list:
    events = []
    for line in text.splitlines():
        events.extend(reader.feed(line))
    return events


@pytest.mark.parametrize(("raw", "text", "level"), [
    ("sglang-1  | [2025-06-19 15:12:27 TP0] Load weight end. type=X", "Load weight end. type=X", None),
    ("(EngineCore_DP0 pid=6880) INFO 06-22 02:54:47 [kv_cache_utils.py:716] GPU KV cache size: 251,920 tokens",
     "GPU KV cache size: 251,920 tokens", "INFO"),
    ("(VllmWorker rank=0 pid=2480291) INFO 05-07 19:18:17 [loader.py:458] Loading weights took 3.07 seconds",
     "Loading weights took 3.07 seconds", "INFO"),
    ("INFO 08-19 07:51:03 model_runner.py:732] Loading model weights took 2.3463 GB",
     "Loading model weights took 2.3463 GB", "INFO"),
    ("\x1b[36m(RayWorkerVllm pid=74362)\x1b[0m [W CUDAGraph.cpp:145] Warning: Waiting for pending NCCL work "
     "[repeated 7x across cluster]", "Warning: Waiting for pending NCCL work", "WARNING"),
    ("[rank0]: RuntimeError: CUDA error: no kernel image is available", "RuntimeError: CUDA error: no kernel image "
     "is available", None),
    ("2025-08-21T15:04:13.469920299Z RuntimeError: Engine core initialization failed.",
     "RuntimeError: Engine core initialization failed.", None),
    ("2023-12-26 07:10:19,486\tWARNING worker.py:2074 -- A worker died", "A worker died", "WARNING"),
    ("[2025-11-30 11:18:05] INFO:     Uvicorn running on http://127.0.0.1:30000", "Uvicorn running on "
     "http://127.0.0.1:30000", "INFO"),
    ("(SGLangEngine pid=23901) [2026-01-04 01:42:54 TP0] Registering 0 cuda graph addresses",
     "Registering 0 cuda graph addresses", None),
    ("Loading shards:  50% | 1/2\rLoading shards: 100% | 2/2", "Loading shards: 100% | 2/2", None),
    # glog's prefix (Triton's Python backend that hosts vLLM quotes its message, newlines escaped; Mooncake bare)
    ('E1216 02:12:49.624646 179 model.py:248] "[vllm] Failed to start engine: NoneType: None\\n"',
     "[vllm] Failed to start engine: NoneType: None", "ERROR"),
    ("W1120 11:10:27.133715 203020 transfer_engine.cpp:305] Retrying handshake", "Retrying handshake", "WARNING"),
])
def test_normalize_line_removes_launcher_and_engine_prefixes(raw, text, level):
    norm = normalize_line(raw)
    assert norm.text == text
    assert norm.level == level


def test_normalize_line_keeps_timestamps_comparable():
    assert normalize_line("[2025-06-19 15:12:27 TP0] x").timestamp == ("full", "2025-06-19 15:12:27.000000")
    assert normalize_line("INFO 06-22 02:54:47 [a.py:1] x").timestamp == ("md", "06-22 02:54:47.000000")


SGLANG_START = """\
[2026-02-27 17:10:27 TP0] Load weight end. elapsed=653.47 s, type=Qwen3_5MoeForConditionalGeneration, dtype=torch.bfloat16, avail mem=19.08 GB, mem usage=3.76 GB.
[2026-02-27 17:10:27 TP1] Load weight end. elapsed=653.47 s, type=Qwen3_5MoeForConditionalGeneration, dtype=torch.bfloat16, avail mem=19.08 GB, mem usage=3.76 GB.
[2025-06-19 15:12:27 TP0] KV Cache is allocated. #tokens: 132681, K size: 9.11 GB, V size: 9.11 GB
[2025-06-19 15:12:27 TP1] KV Cache is allocated. #tokens: 132681, K size: 9.11 GB, V size: 9.11 GB
[2025-11-30 11:18:05] Capture cuda graph end. Time elapsed: 5.92 s. mem usage=1.44 GB. avail mem=37.06 GB.
[2025-11-30 11:18:05] max_total_num_tokens=132681, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=4096, context_len=128000, available_gpu_mem=37.06 GB
[2025-11-30 11:18:05] INFO:     Application startup complete.
[2025-11-30 11:18:05] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)
[2025-12-04 21:00:23] INFO:     127.0.0.1:55770 - "GET /get_model_info HTTP/1.1" 200 OK
[2025-11-30 11:18:09] The server is fired up and ready to roll!
[2026-07-21 15:00:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, accept len: 3.05, accept rate: 0.68, npu graph: True, gen throughput (token/s): 239.06, #queue-req: 2
"""


def test_sglang_start_milestones_once_each_and_ready_only_after_warmup():
    reader = LogReader()
    events = feed_all(reader, SGLANG_START)
    assert events == [
        WeightsLoaded(seconds=653.47, gib=3.76),
        KvCacheAllocated(tokens=132681, gib=18.22),
        CudaGraphCaptured(seconds=5.92, gib=1.44),
        ServerReady(url="http://127.0.0.1:30000"),
        DecodeStats(running=24, throughput_tok_s=239.06, accept_len=3.05, accept_rate=0.68, queued=2, kv_usage=0.66),
    ]
    assert reader.engine == "sglang"


def test_sglang_older_decode_wording_and_hybrid_model_line():
    reader = LogReader("sglang")
    old = ("[2025-03-14 02:16:14 TP0] Decode batch. #running-req: 509, #token: 180776, token usage: 0.43, gen "
           "throughput (token/s): 7897.87, largest-len: 0, #queue-req: 0, ")
    hybrid = ("[2026-07-04 05:01:33 TP0] Decode batch, #running-req: 40, #full token: 350592, full token usage: 0.74, "
              "mamba num: 160, mamba usage: 0.80, accept len: 3.13, accept rate: 0.71, npu graph: True, gen "
              "throughput (token/s): 155.34, #queue-req: 0")
    assert reader.feed(old) == [DecodeStats(running=509, throughput_tok_s=7897.87, queued=0, kv_usage=0.43)]
    stats = reader.feed(hybrid)[0]
    assert (stats.running, stats.accept_len, stats.accept_rate) == (40, 3.13, 0.71)


VLLM_START = """\
(Worker_TP0 pid=163520) INFO 06-10 17:34:23 [default_loader.py:397] Loading weights took 5.15 seconds
(Worker_TP0 pid=163520) INFO 06-10 17:34:24 [gpu_model_runner.py:5132] Model loading took 8.91 GiB memory and 194.454138 seconds
(Worker_TP1 pid=163521) INFO 06-10 17:34:24 [gpu_model_runner.py:5132] Model loading took 8.91 GiB memory and 194.454138 seconds
INFO 06-22 02:54:47 [gpu_worker.py:232] Available KV cache memory: 26.91 GiB
INFO 06-22 02:54:47 [kv_cache_utils.py:716] GPU KV cache size: 251,920 tokens
INFO 06-22 02:54:47 [kv_cache_utils.py:720] Maximum concurrency for 40,960 tokens per request: 6.15x
(EngineCore_DP0 pid=1206446) INFO 11-21 10:26:25 [gpu_model_runner.py:4245] Graph capturing finished in 3 secs, took 0.71 GiB
(APIServer pid=1206292) INFO 11-21 10:26:29 [api_server.py:2056] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=1206292) INFO 11-21 10:26:29 [launcher.py:38] Available routes are:
(APIServer pid=1206292) INFO:     Application startup complete.
(APIServer pid=6485) INFO 08-05 20:20:43 [loggers.py:118] Engine 000: Avg prompt throughput: 536.5 tokens/s, Avg generation throughput: 17.1 tokens/s, Running: 1 reqs, Waiting: 121 reqs, GPU KV cache usage: 56.2%, Prefix cache hit rate: 59.6%
(APIServer pid=6485) INFO 08-05 20:20:43 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 1.80, Accepted throughput: 0.00 tokens/s, Drafted throughput: 1.23 tokens/s, Accepted: 0 tokens, Drafted: 495 tokens, Per-position acceptance rate: 0.000, 0.000, Avg Draft acceptance rate: 40.0%
"""


def test_vllm_start_and_spec_decode_stats():
    reader = LogReader()
    events = feed_all(reader, VLLM_START)
    assert events == [
        WeightsLoaded(seconds=5.15),
        WeightsLoaded(seconds=194.454138, gib=8.91),
        KvCacheAllocated(tokens=251920, gib=26.91),
        CudaGraphCaptured(seconds=3.0, gib=0.71),
        ServerReady(url="http://0.0.0.0:8000"),
        DecodeStats(running=1, throughput_tok_s=17.1, queued=121, kv_usage=0.562),
        DecodeStats(running=1, throughput_tok_s=17.1, queued=121, kv_usage=0.562, accept_len=1.8, accept_rate=0.4),
    ]
    assert reader.engine == "vllm"


def test_vllm_older_wordings():
    reader = LogReader("vllm")
    v0 = """\
INFO 11-20 10:45:57 model_runner.py:692] Loading model weights took 1.9900 GB
INFO 12-20 20:25:46 worker.py:241] Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90
INFO 12-20 20:25:46 distributed_gpu_executor.py:57] # GPU blocks: 1952, # CPU blocks: 2048
INFO 05-13 14:15:33 [api_server.py:1131] Starting vLLM API server on http://0.0.0.0:8000
INFO:     Uvicorn running on http://0.0.0.0:40666 (Press CTRL+C to quit)
INFO 10-11 17:22:27 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%
INFO 04-08 10:00:00 metrics.py:1] Speculative metrics: Draft acceptance rate: 0.750, System efficiency: 0.6
"""
    events = feed_all(reader, v0)
    assert events[0] == WeightsLoaded(gib=1.99)
    assert events[1] == KvCacheAllocated(tokens=1952 * 16, gib=3.81)
    assert events[2] == ServerReady(url="http://0.0.0.0:8000")
    assert events[3] == DecodeStats(running=0, throughput_tok_s=0.0, queued=0, kv_usage=0.0)
    assert events[4].accept_rate == 0.75 and events[4].accept_len is None


def test_weight_loading_progress_is_reported_when_it_moves():
    reader = LogReader()
    assert reader.feed("Loading safetensors checkpoint shards:  40% Completed | 2/5 [00:03<00:04, 1.25it/s]") == \
        [WeightsProgress(done=2, total=5)]
    assert reader.feed("Loading safetensors checkpoint shards:  40% Completed | 2/5 [00:04<00:04, 1.25it/s]") == []
    assert reader.feed("Multi-thread loading shards: 100% Completed | 142/142 [00:25<00:00,  5.66it/s]") == \
        [WeightsProgress(done=142, total=142)]


def test_a_relaunch_in_the_same_log_reports_its_milestones_again():
    reader = LogReader("sglang")
    line = "[2025-06-19 15:12:27] KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB"
    assert reader.feed(line)
    assert reader.feed("[2025-06-19 16:00:00] server_args=ServerArgs(model_path='/models/x')") == []
    assert reader.feed(line) == [KvCacheAllocated(tokens=1000, gib=2.0)]


def test_error_lines_are_reported_and_harmless_warnings_are_not():
    reader = LogReader("sglang")
    assert reader.feed("[2025-03-11 15:02:53 TP0] RuntimeError: NCCL error: unhandled system error") == \
        [ErrorLine(text="RuntimeError: NCCL error: unhandled system error")]
    assert reader.feed("[2025-01-01 00:00:00 TP0] Setup Custom allreduce failed with CUDART error: peer access is "
                       "not supported between these two devices. To silence this warning, specify "
                       "--disable-custom-all-reduce explicitly.") == []
    token_line = "ValueError: bad token hf_abcdefghijklmnopqrstuvwxyz012345"
    assert reader.feed(token_line) == [ErrorLine(text="ValueError: bad token [REDACTED]")]


def test_is_ready_line_per_engine():
    assert is_ready_line("[2025-11-30 11:18:09] The server is fired up and ready to roll!")
    assert is_ready_line("(APIServer pid=1) INFO:     Application startup complete.", engine="vllm")
    # SGLang's uvicorn lines come before the warm-up: not ready yet.
    assert not is_ready_line("[2025-11-30 11:18:05] INFO:     Application startup complete.", engine="sglang")
    assert not is_ready_line("[2025-11-30 11:18:05] Load weight end. type=X")


def test_events_round_trip_as_json():
    for event in (DecodeStats(running=2, throughput_tok_s=10.5, accept_len=1.8), ServerReady(url=None),
                  KvCacheAllocated(tokens=5, gib=None)):
        assert LOG_EVENT_ADAPTER.validate_json(event.model_dump_json()) == event


def test_engine_detection_on_the_corpus():
    wrong = []
    for path in sorted(CRASHLOGS.glob("*.json")):
        entry = json.loads(path.read_text())
        found = detect_engine(entry["log"])
        if found is not None and found != entry["engine"]:
            wrong.append((path.name, found))
    assert not wrong


@pytest.mark.parametrize("line", [
    # vLLM 0.33.0 names the cache's device (vllm/v1/core/kv_cache_utils.py update_kv_cache_capacity)
    "(EngineCore_DP0 pid=1) INFO 06-22 02:54:47 [kv_cache_utils.py:1148] XPU KV cache size: 251,920 tokens, "
    "Maximum concurrency for 32,768 tokens per request: 7.69x",
    "(EngineCore_DP0 pid=1) INFO 06-22 02:54:47 [kv_cache_utils.py:1148] GPU + host KV cache size: 251,920 tokens, "
    "Maximum concurrency for 32,768 tokens per request: 7.69x",
])
def test_vllm_kv_cache_size_on_any_device_is_the_kv_cache_allocated(line):
    events = list(LogReader("vllm").feed(line))
    assert [(event.kind, getattr(event, "tokens", None)) for event in events] == [("kv_cache_allocated", 251920)]


def test_sglang_sizing_the_kv_cache_after_graph_capture_is_the_kv_cache_allocated():
    # SGLang 0.5.2x (sglang/srt/model_executor/model_runner_components/kv_pool_runtime.py); the drafter's pool is not it
    reader = LogReader("sglang")
    line = ("[2026-05-01 10:00:00 TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, "
            "#tokens: 412345, KV size: 20.15 GB, avail mem=3.10 GB")
    assert [(e.kind, e.tokens) for e in reader.feed(line)] == [("kv_cache_allocated", 412345)]
    draft = ("[2026-05-01 10:00:00 TP0] Post-capture KV sizing: draft KV cache allocated. dtype: torch.bfloat16, "
             "#tokens: 1000, KV size: 1.00 GB")
    assert list(LogReader("sglang").feed(draft)) == []


@pytest.mark.parametrize(("line", "seconds"), [
    ("[2025-05-01 10:00:00 TP0] Capture cuda graph end. Time elapsed: 12.3 s. mem usage=0.5 GB. avail mem=10.1 GB.",
     12.3),
    # SGLang 0.5.2x names the role and the pass (sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py)
    ("[2026-05-01 10:00:00 TP0] Capture target decode CUDA graph end. elapsed=12.30 s, mem usage=0.50 GB, "
     "avail mem=20.10 GB.", 12.3),
])
def test_sglang_cuda_graph_capture_end_in_both_wordings(line, seconds):
    events = list(LogReader("sglang").feed(line))
    assert [(event.kind, event.seconds) for event in events] == [("cuda_graph_captured", seconds)]


def test_the_drafters_graph_capture_is_not_the_models():
    line = "[2026-05-01 10:00:00 TP0] Capture draft decode CUDA graph end. elapsed=2.30 s, mem usage=0.10 GB."
    assert list(LogReader("sglang").feed(line)) == []


def test_sglang_0_5_2x_arguments_logged_as_a_dict_start_a_launch_and_name_the_engine():
    # sglang/srt/entrypoints/engine.py (0.5.23): logger.info(f"server_args={...resolved_dict()...}")
    from bot.diagnose.reading import prepare
    from bot.diagnose.structure import parse_structure
    from bot.logevents import detect_engine_of

    log = ("[2026-05-01 10:00:00] server_args={'model_path': '/models/Qwen3-8B', 'speculative_algorithm': 'EAGLE3'}\n"
           "[2026-05-01 10:00:05 TP0] Load weight begin. avail mem=70.00 GB\n"
           "[2026-05-01 10:00:59 TP0] Capture target decode CUDA graph begin. backend=flashinfer, avail mem=20.00 GB\n")
    lines = prepare("[2026-05-01 09:00:00] server_args={'model_path': '/old'}\nan earlier launch\n" + log)
    assert lines[0].text.startswith("server_args={'model_path': '/models/Qwen3-8B'")  # the latest launch only
    assert [m.phase for m in parse_structure(lines).milestones] == ["args_parsed", "weights_loading",
                                                                     "graphs_capturing"]
    assert detect_engine_of([(line.raw, line.text) for line in lines]) == "sglang"


def test_sglang_decode_stats_with_the_forward_iteration_are_read():
    # SGLANG_LOG_FORWARD_ITERS adds " [N]" after "Decode batch" (scheduler_components/metrics_reporter.py, 0.5.2x)
    line = ("[2026-05-01 10:00:00 TP0] Decode batch [1200], #running-req: 3, #token: 900, token usage: 0.01, "
            "cuda graph: True, gen throughput (token/s): 123.45, #queue-req: 0,")
    events = list(LogReader("sglang").feed(line))
    assert [(event.kind, event.running) for event in events] == [("decode_stats", 3)]
