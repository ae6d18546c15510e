"""A start-up tail without any error: where it stopped says how sure "still starting" is (bot/diagnose/health.py
_STOPPED_AT). Lines written fresh in the engines' words (vLLM's "non-default args:" of vllm/entrypoints/utils.py,
SGLang's "server_args=ServerArgs(...)" and "Capture cuda graph begin" of model_executor/cuda_graph_runner.py)."""

from __future__ import annotations

from bot.diagnose import diagnose

_VLLM_ARGS = ("(APIServer pid=812) INFO 11-28 10:02:11 [api_server.py:1896] vLLM API server version 0.11.0\n"
              "(APIServer pid=812) INFO 11-28 10:02:11 [utils.py:233] non-default args: {'model': '/models/Qwen3-8B', "
              "'max_model_len': 8192}\n")
_SGLANG_CAPTURE = (
    "[2026-03-01 10:00:01] server_args=ServerArgs(model_path='/models/Qwen3-8B', tp_size=1)\n"
    "[2026-03-01 10:00:20 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=62.1 GB, "
    "mem usage=15.4 GB.\n"
    "[2026-03-01 10:00:21 TP0] KV Cache is allocated. #tokens: 361021, K size: 24.8 GB, V size: 24.8 GB\n"
    "[2026-03-01 10:00:21 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=11.2 GB\n")


def test_a_tail_that_stops_after_the_arguments_is_a_less_sure_start_with_the_crash_named() -> None:
    result = diagnose(_VLLM_ARGS)
    assert result.category == "none"
    assert result.confidence == 0.4
    assert result.alternatives == ["other"]
    assert "right after the engine read its arguments" in result.cause
    assert any("from the launch on" in step for step in result.next_steps)


def test_a_tail_that_stops_in_the_capture_names_the_capture() -> None:
    result = diagnose(_SGLANG_CAPTURE)
    assert result.category == "none"
    assert result.alternatives == ["cuda_graph_oom"]
    assert "captured" in result.cause and result.confidence < 0.5


def test_a_tail_past_the_capture_stays_a_plain_start() -> None:
    log = _SGLANG_CAPTURE + ("[2026-03-01 10:00:40 TP0] Capture cuda graph end. Time elapsed: 19.1 s. mem usage=1.2 "
                             "GB. avail mem=10.0 GB.\n")
    result = diagnose(log)
    assert result.category == "none"
    assert result.alternatives == []
    assert result.confidence >= 0.6


def test_a_known_death_is_still_read_as_one() -> None:
    # The pipeline's crash path: the process is gone, so a tail without an error is never "still starting".
    assert diagnose(_VLLM_ARGS, ended=True).category != "none"
