"""The plan matrix of `make engine-check`: what deploybot plans for every shipped model config x captured engine
release x request variant, on simulated hosts of 8 GPUs of 24 / 48 / 80 / 141 GB; plus the negative controls.

Runs in the repository's venv (it imports the planner); the plans are then validated by tools/engine_validate.py
inside each release's own venv.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from bot.config import HostConfig, Policy
from bot.models import DeployRequest, EngineInstall, GpuInfo, HostFacts, LaunchPlan, ModelFolder
from bot.simhost.captures import CAPTURES, captured_versions, help_text
from bot.simhost.modelfiles import available_models, config_path, write_model_folder
from planners.plan import make_plan

MIB = 1 << 20
#: GPU kind -> (name, MiB as nvidia-smi prints it, compute capability); tools/engine_device.py answers the same.
GPU_KINDS = {
    "24": ("NVIDIA GeForce RTX 4090", 24564, "8.9"),
    "48": ("NVIDIA RTX A6000", 49140, "8.6"),
    "80": ("NVIDIA H100 80GB HBM3", 81559, "9.0"),
    "141": ("NVIDIA H200", 143771, "9.0"),
}
GPU_COUNT = 8
VARIANTS: dict[str, dict] = {
    "default": {},
    "mtp": {"speculative": "mtp"},
    "ctx32k": {"context_length": 32768},
    "fp8": {"quantization": "fp8"},
    "mtp+fp8": {"speculative": "mtp", "quantization": "fp8"},
    "mtp+ctx32k": {"speculative": "mtp", "context_length": 32768},
    "tp8": {"tp": 8},
}


@dataclass
class Case:
    id: str
    engine: str
    version: str
    gpu: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    control: str | None = None  # a negative control: what it breaks
    #: a negative control's expected refusal: a regex over the engine's message and where it was raised, so that a
    #: control rejected for another reason (a harness artefact) does not count as the check saying no
    expect: str | None = None


def gpus(kind: str) -> list[GpuInfo]:
    name, mib, cc = GPU_KINDS[kind]
    return [
        GpuInfo(index=i, name=name, uuid=f"GPU-{i:04d}", memory_total_bytes=mib * MIB, memory_used_bytes=300 * MIB,
                memory_free_bytes=(mib - 300) * MIB, compute_capability=cc)
        for i in range(GPU_COUNT)
    ]


def model_folder(models_dir: Path, name: str) -> ModelFolder:
    folder = models_dir / name
    if not (folder / "config.json").exists():
        write_model_folder(models_dir, name)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    give_shards_headers(folder, index["weight_map"])
    config = json.loads(config_path(name).read_text())  # a target model or a drafter (configs/drafters)
    if "auto_map" in config:
        # the real checkpoint ships the custom configuration_*.py that auto_map names; the simulated folder has no
        # code, so the engines read the config through transformers' built-in class (same model_type) instead.
        # The planner still sees auto_map (and asks for --trust-remote-code as it would on the real folder).
        (folder / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "auto_map"}))
    return ModelFolder(name=name, path=str(folder), exists=True, config=config,
                       index_total_size=index["metadata"]["total_size"], has_custom_code=False)


def full_help(engine: str, version: str) -> str:
    """The release's complete help: vLLM's ``--help=all`` where captured (its plain ``--help`` lists each option
    once in the usage block, without aliases or the ``--no-`` half of a boolean pair, and 0.2x+ only names the
    groups below it), else the plain ``--help``."""
    whole = CAPTURES / f"{engine}-{version}.help-all.txt"
    return whole.read_text() if whole.exists() else help_text(engine, version)


def give_shards_headers(folder: Path, weight_map: dict[str, str]) -> None:
    """The simulated shards are sparse zeros of the checkpoint's size; a real shard opens with a safetensors header
    (8-byte length, JSON of its tensors), and vLLM 0.3x reads those headers while it builds its config (which
    tensors the checkpoint has, e.g. whether lm_head is tied: transformers_utils/config.py checkpoint_has_lm_head).
    Each shard gets the header of the tensors the index puts in it, their bytes filling the shard, the size kept."""
    by_shard: dict[str, list[str]] = {}
    for tensor, shard in weight_map.items():
        by_shard.setdefault(shard, []).append(tensor)
    for shard, tensors in by_shard.items():
        path = folder / shard
        with open(path, "r+b") as handle:
            if handle.read(8) != bytes(8):
                continue  # has its header already
            handle.seek(0)
            handle.write(_header(path.stat().st_size, tensors))


def _header(size: int, tensors: list[str]) -> bytes:
    length = 0
    for _ in range(8):  # the header's length moves the data offsets, which change the length: settle it
        data = size - 8 - length
        share = (data // len(tensors)) // 2 * 2
        entries, offset = {}, 0
        for i, tensor in enumerate(tensors):
            nbytes = share if i < len(tensors) - 1 else data - offset
            dtype, width = ("BF16", 2) if nbytes % 2 == 0 else ("U8", 1)
            entries[tensor] = {"dtype": dtype, "shape": [nbytes // width], "data_offsets": [offset, offset + nbytes]}
            offset += nbytes
        blob = json.dumps(entries).encode()
        blob += b" " * (-len(blob) % 8)
        if len(blob) == length:
            return len(blob).to_bytes(8, "little") + blob
        length = len(blob)
    raise ValueError(f"no stable safetensors header for {len(tensors)} tensors in {size} bytes")


def facts(engine: str, version: str, kind: str, folder: ModelFolder, plain_help: bool = False) -> HostFacts:
    text = help_text(engine, version) if plain_help else full_help(engine, version)
    return HostFacts(host="check", gpu_source="nvml", gpus=gpus(kind), model=folder, models_available=[folder.name],
                     engines={engine: EngineInstall(name=engine, version=version)}, engine_help={engine: text})


def plans(models_dir: Path, plain_help: bool = False) -> tuple[list[Case], list[str]]:
    """Every plan deploybot makes over the matrix, and one line per request it refused (not a plan: not checked).
    ``plain_help``: plan from the plain ``--help`` (what the bot's probe runs today) instead of the complete one."""
    cases: list[Case] = []
    refused: list[str] = []
    host = HostConfig(models_dir=str(models_dir), python="/usr/bin/python3", transport="local")
    policy = Policy()
    for model in available_models():
        folder = model_folder(models_dir, model)
        for engine in ("sglang", "vllm"):
            for version in captured_versions(engine):
                for kind in GPU_KINDS:
                    for variant, asked in VARIANTS.items():
                        request = DeployRequest(action="start", model=model, host="check", engine=engine, **asked)
                        result = make_plan(request, facts(engine, version, kind, folder, plain_help), host, policy)
                        case_id = f"{engine}-{version} {kind}GB {model} {variant}"
                        if isinstance(result, LaunchPlan):
                            cases.append(Case(case_id, engine, version, kind, result.argv[3:], dict(result.env)))
                        else:
                            refused.append(f"{case_id}: {result.reason}")
    return cases, refused


#: What each control's refusal looks like, per engine (messages of the captured releases' own checks):
#: SGLang ModelConfig "User-specified context_length (...) is greater than the derived context_length", its
#: speculative checks in server_args.py / arg_groups/speculative_hook.py, QKVParallelLinear "32 is not divisible
#: by 3"; vLLM ModelConfig "User-specified max_model_len (...) is greater than the derived max_model_len",
#: SpeculativeConfig "num_speculative_tokens was provided but without speculative model",
#: ModelConfig.verify_with_parallel_config "Total number of attention heads (32) must be divisible by tensor
#: parallel size (3)".
EXPECT = {
    ("sglang", "context"): r"context_length \(1000000\) is greater than the derived context_length",
    # an assert in ServerArgs._handle_speculative_decoding (0.5.9-0.5.11) / speculative_hook.py (0.5.2x)
    ("sglang", "partial-spec"): r"server_args\.py:\d+ in _handle_speculative|speculative_hook\.py:\d+ in _handle_",
    ("sglang", "tp3"): r"32 is not divisible by 3",
    ("vllm", "context"): r"max_model_len.{0,40}1000000.{0,40}greater than the derived",
    ("vllm", "partial-spec"): r"SpeculativeConfig.*num_speculative_tokens was provided but without speculative model",
    ("vllm", "tp3"): r"attention heads \(32\) must be divisible by tensor parallel size \(3\)",
}


def controls(models_dir: Path) -> list[Case]:
    """Launch lines that must fail each engine's own validation, for the reason they break: they show the check
    can say no."""
    qwen8, llama8, qwen36 = (str(models_dir / m) for m in ("Qwen3-8B", "Llama-3.1-8B-Instruct", "Qwen3.6-27B"))
    for name in ("Qwen3-8B", "Llama-3.1-8B-Instruct", "Qwen3.6-27B"):
        model_folder(models_dir, name)
    lines = {
        "sglang": {
            "context": (["--model-path", qwen8, "--context-length", "1000000"],
                        "context 1,000,000 > the model's 40,960"),
            "partial-spec": (["--model-path", qwen36, "--tp-size", "2", "--trust-remote-code", "--disable-radix-cache",
                              "--speculative-algorithm", "EAGLE", "--speculative-eagle-topk", "1"],
                             "topk without --speculative-num-steps"),
            "tp3": (["--model-path", llama8, "--tp-size", "3"], "TP 3 on 32 attention heads"),
        },
        "vllm": {
            "context": (["--model", qwen8, "--max-model-len", "1000000"], "max-model-len 1,000,000 > the model's 40,960"),
            "partial-spec": (["--model", llama8, "--speculative-config", '{"num_speculative_tokens": 1}'],
                             "num_speculative_tokens without a method or draft model"),
            "tp3": (["--model", llama8, "--tensor-parallel-size", "3"], "TP 3 on 32 attention heads"),
        },
    }
    out: list[Case] = []
    for engine, by_name in lines.items():
        for version in captured_versions(engine):
            for name, (argv, what) in by_name.items():
                out.append(Case(f"{engine}-{version} control {name}", engine, version, "80", argv, control=what,
                                expect=EXPECT[(engine, name)]))
    return out
