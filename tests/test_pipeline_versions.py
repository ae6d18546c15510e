"""The newest engine releases on the simulated fleet: hosts whose engines are sglang 0.5.23 / 0.5.11 and vLLM 0.33.0
/ 0.34.0 (flags and --help from the real releases' captures), the seed request planned and launched on each."""

from __future__ import annotations

import subprocess

import pytest

from bot.events import Launched, Planned, Ready, RecordingThread
from bot.pipeline import Requester
from bot.simhost import build_sim_host
from bot.simhost.captures import help_text
from tests.test_pipeline_local import make_pipeline

SEED = "start Qwen3.6-27B on CT129 with stock MTP"


def test_a_simulated_engine_prints_its_release_help_and_rejects_the_old_name(tmp_path) -> None:
    sim = build_sim_host(tmp_path / "h", engines={"sglang": "0.5.23", "vllm": "0.33.0"}, models=["Qwen3-8B"])
    shown = subprocess.run([str(sim.python), "-m", "sglang.launch_server", "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout == help_text("sglang", "0.5.23")
    shown = subprocess.run(
        [str(sim.python), "-m", "vllm.entrypoints.openai.api_server", "--help"], capture_output=True, text=True
    )
    assert shown.stdout == help_text("vllm", "0.33.0")
    old = subprocess.run(
        [str(sim.python), "-m", "sglang.launch_server", "--model-path", str(sim.models_dir / "Qwen3-8B"),
         "--cuda-graph-max-bs", "8"],
        capture_output=True, text=True, timeout=60,
    )
    assert old.returncode == 2 and "ambiguous option: --cuda-graph-max-bs could match" in old.stderr


@pytest.mark.parametrize(
    ("engines", "expected"),
    [
        ({"sglang": "0.5.23"}, ["--mamba-radix-cache-strategy", "extra_buffer", "--cuda-graph-max-bs-decode"]),
        ({"sglang": "0.5.11"}, ["--mamba-scheduler-strategy", "extra_buffer", "--cuda-graph-max-bs"]),
        ({"vllm": "0.33.0"}, ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}']),
        ({"vllm": "0.34.0"}, ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}']),
    ],
)
async def test_seed_request_is_planned_and_launched_on_each_release(tmp_path, engines, expected) -> None:
    sim = build_sim_host(tmp_path / "CT129", engines=engines, ready_after_s=0.3)
    pipeline = make_pipeline(tmp_path, {"CT129": {**sim.host_config(), "gpus": "2x NVIDIA RTX A6000"}})
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text(SEED, thread, Requester(user="U1"))
        assert outcome.state == "ready", outcome
        plan = thread.of(Planned)[0].plan
        (engine, version), = engines.items()
        assert plan.engine == engine and plan.engine_version == version and plan.speculative == "mtp"
        line = plan.argv[3:]
        for token in expected:
            assert token in line, (token, line)
        assert "--disable-radix-cache" not in line
        assert any(f"checked against {'SGLang' if engine == 'sglang' else 'vLLM'} {version}'s own --help" in r
                   for r in plan.reasons)
        assert thread.of(Launched) and thread.of(Ready)
    finally:
        await pipeline.close()
        sim.terminate_processes()
