"""Shared inputs for the planner tests: real configs, the corpus fleet as HostFacts, and an argparse-made --help.

No test functions here. HostFacts are built from shared/corpus/inventory.json's descriptions ("2x NVIDIA RTX A6000
(49140 MiB)"): memory in bytes, compute capability by GPU name, as the probe would report idle GPUs.
"""

from __future__ import annotations

import argparse
import json
import re
from functools import cache
from pathlib import Path

import pytest

from bot.config import HostConfig, Policy
from bot.models import EngineInstall, GpuInfo, GpuProcess, HostFacts, ModelFolder, ServerInfo

MIB = 1 << 20
GIB = 1 << 30


#: The corpus the tests use, copied from shared/corpus (provenance in tests/data/PROVENANCE.md).
DATA = Path(__file__).resolve().parent / "data"

#: Byte-for-byte copies of shared/configs shipped with the simulated host (tests/data/configs.sha256 pins them).
SHIPPED_CONFIGS = Path(__file__).resolve().parents[1] / "bot" / "simhost" / "configs"


def configs_dir() -> Path:
    return SHIPPED_CONFIGS


def config_names() -> list[str]:
    return sorted(p.stem for p in configs_dir().glob("*.json"))


@cache
def _config_text(name: str) -> str:
    return (configs_dir() / f"{name}.json").read_text()


def load_config(name: str) -> dict:
    return json.loads(_config_text(name))


#: Real checkpoint sizes known from configs/SIZES.md (safetensors index total_size).
KNOWN_INDEX_BYTES = {
    "Llama-3.1-8B-Instruct": 16_060_522_496,
    "Qwen3.6-27B": 55_562_855_904,
}

#: Compute capability by GPU name: what NVML would report for the fleet's cards.
CC_BY_NAME = {"RTX A6000": "8.6", "RTX 4090": "8.9", "H100": "9.0", "A100": "8.0", "H200": "9.0"}


def inventory() -> dict:
    return json.loads((DATA / "corpus" / "inventory.json").read_text())["hosts"]


def gpus_from_description(text: str, used: dict[int, int] | None = None) -> list[GpuInfo]:
    match = re.match(r"\s*(\d+)x\s+(.+?)\s+\((\d+)\s*MiB\)", text)
    assert match, text
    count, name, mib = int(match.group(1)), match.group(2), int(match.group(3))
    cc = next(v for k, v in CC_BY_NAME.items() if k in name)
    used = used or {}
    total = mib * MIB
    return [
        GpuInfo(
            index=i,
            name=name,
            uuid=f"GPU-{i:04d}",
            memory_total_bytes=total,
            memory_used_bytes=used.get(i, 0),
            memory_free_bytes=total - used.get(i, 0),
            compute_capability=cc,
        )
        for i in range(count)
    ]


def folder_for(model: str, models_dir: str, *, index: bool = True) -> ModelFolder:
    names = set(config_names())
    config = load_config(model) if model in names else None
    return ModelFolder(
        name=model,
        path=f"{models_dir}/{model}",
        exists=True,
        config=config,
        config_error=None if config else "no config.json in the corpus for this model",
        index_total_size=KNOWN_INDEX_BYTES.get(model) if index else None,
        has_custom_code=False,
    )


def fleet_facts(
    host: str,
    model: str,
    *,
    engines: dict[str, str] | None = None,
    engine_help: dict[str, str] | None = None,
    used: dict[int, int] | None = None,
    processes: list[GpuProcess] | None = None,
    listening: list[int] | None = None,
    index: bool = True,
) -> HostFacts:
    entry = inventory()[host]
    engines = {"sglang": "0.5.10"} if engines is None else engines
    return HostFacts(
        host=host,
        gpu_source="nvml",
        gpus=gpus_from_description(entry["gpus"], used),
        gpu_processes=processes or [],
        listening_ports=listening or [],
        model=folder_for(model, entry["models_dir"], index=index),
        models_available=entry["models"],
        engines={name: EngineInstall(name=name, version=version) for name, version in engines.items()},
        engine_help=engine_help or {},
    )


def host_config(host: str) -> HostConfig:
    entry = inventory()[host]
    return HostConfig(
        address="127.0.0.1",
        transport="local",
        python="/opt/ml-env/bin/python3",
        models_dir=entry["models_dir"],
        models=entry["models"],
        gpus=entry["gpus"],
    )


POLICY = Policy()


def foreign_process(gpu: int, gib: float, *, pid: int = 4242, server: ServerInfo | None = None) -> GpuProcess:
    return GpuProcess(pid=pid, gpu_index=gpu, used_bytes=int(gib * GIB), name="python3", server=server)


# ---------------------------------------------------------------------------------------------- --help texts

#: SGLang flags (0.5.9/0.5.10 era, per engines/LAUNCH_FLAGS.md §1) with their aliases and choices.
SGLANG_FLAGS: list[tuple[list[str], dict]] = [
    (["--model-path", "--model"], {"required": False}),
    (["--host"], {}),
    (["--port"], {"type": int}),
    (["--tensor-parallel-size", "--tp-size", "--tp"], {"type": int}),
    (["--served-model-name"], {}),
    (["--trust-remote-code"], {"action": "store_true"}),
    (["--context-length"], {"type": int}),
    (["--mem-fraction-static"], {"type": float}),
    (["--max-running-requests"], {"type": int}),
    (["--max-total-tokens"], {"type": int}),
    (["--chunked-prefill-size"], {"type": int}),
    (["--cuda-graph-max-bs"], {"type": int}),
    (["--disable-cuda-graph"], {"action": "store_true"}),
    (["--disable-radix-cache"], {"action": "store_true"}),
    (["--kv-cache-dtype"], {"choices": ["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"]}),
    (["--quantization"], {"choices": ["awq", "fp8", "gptq", "marlin", "gptq_marlin", "awq_marlin", "w8a8_fp8"]}),
    (["--speculative-algorithm"], {"choices": ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]}),
    (["--speculative-draft-model-path"], {}),
    (["--speculative-num-steps"], {"type": int}),
    (["--speculative-eagle-topk"], {"type": int}),
    (["--speculative-num-draft-tokens"], {"type": int}),
    (["--mamba-ssm-dtype"], {"choices": ["float32", "bfloat16"]}),
    (["--max-mamba-cache-size"], {"type": int}),
    (["--mamba-full-memory-ratio"], {"type": float}),
    (["--mamba-scheduler-strategy"], {"choices": ["auto", "no_buffer", "extra_buffer"]}),
    (["--reasoning-parser"], {}),
    (["--tool-call-parser"], {}),
]

VLLM_FLAGS: list[tuple[list[str], dict]] = [
    (["--model"], {}),
    (["--served-model-name"], {"nargs": "+"}),
    (["--host"], {}),
    (["--port"], {"type": int}),
    (["--tensor-parallel-size", "-tp"], {"type": int}),
    (["--gpu-memory-utilization"], {"type": float}),
    (["--max-model-len"], {"type": int}),
    (["--max-num-seqs"], {"type": int}),
    (["--trust-remote-code"], {"action": "store_true"}),
    (["--enforce-eager"], {"action": "store_true"}),
    (["--quantization", "-q"], {}),
    (["--kv-cache-dtype"], {"choices": ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]}),
    (["--speculative-config", "-sc"], {}),
    (["--cuda-graph-sizes"], {"nargs": "+"}),
    (["--language-model-only"], {"action": "store_true"}),
]


def argparse_help(prog: str, flags: list[tuple[list[str], dict]], *, drop: tuple[str, ...] = ()) -> str:
    """A --help text made by argparse itself from a flag list (wrapping, aliases and choices as argparse prints)."""
    parser = argparse.ArgumentParser(prog=prog)
    for names, kwargs in flags:
        names = [n for n in names if n not in drop]
        if names:
            parser.add_argument(*names, help=f"{names[0].lstrip('-')} option.", **kwargs)
    return parser.format_help()


def sglang_help(**kwargs) -> str:
    return argparse_help("launch_server.py", SGLANG_FLAGS, **kwargs)


def vllm_help(**kwargs) -> str:
    return argparse_help("api_server.py", VLLM_FLAGS, **kwargs)
