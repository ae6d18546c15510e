"""Check the planner's weight bytes (parameters x dtype path) against what a real GPU allocates.

For each config, build the model with random bf16 weights directly on the GPU (transformers ``from_config``, no
download, nothing from a hub) and compare ``torch.cuda.memory_allocated()`` with the bytes the planner would load
(``memory.weight_bytes`` without an index, minus the MTP head that transformers does not instantiate).
Prints a table and writes it to --out. Needs a CUDA GPU, torch and transformers.

    python bench/gpu_weights_check.py --configs bot/simhost/configs --out bench/results/gpu_weights_check.txt
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planners import memory  # noqa: E402  (after the sys.path line: runs from a checkout)
from planners.model import model_spec  # noqa: E402

DEFAULT_MODELS = [
    "Llama-3.1-8B-Instruct",
    "Qwen3-8B",
    "Mistral-7B-Instruct-v0.3",
    "Qwen3-32B",
    "Qwen3-30B-A3B",
    "gemma-3-27b-it",
    "Qwen3.6-27B",
]
TOLERANCE = 0.03


def build_on_gpu(config: dict):
    """A randomly initialised bf16 model on cuda:0 from the config dict alone."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = dict(config)
    hf_config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    classes = [AutoModelForCausalLM]
    if "vision_config" in config:  # multimodal: the conditional-generation class holds the vision tower too
        from transformers import AutoModelForImageTextToText

        classes.insert(0, AutoModelForImageTextToText)
    last_error: Exception | None = None
    for cls in classes:
        try:
            with torch.device("cuda"):
                try:
                    return cls.from_config(hf_config, dtype=torch.bfloat16)
                except TypeError:  # transformers < 4.56 spells it torch_dtype
                    return cls.from_config(hf_config, torch_dtype=torch.bfloat16)
        except (ValueError, KeyError) as exc:
            last_error = exc
    raise RuntimeError(f"no auto class builds {config.get('architectures')}: {last_error}")


def check(name: str, config: dict) -> dict:
    import torch

    spec = model_spec(config)
    checkpoint, _ = memory.weight_bytes(spec, None)
    planned, _ = memory.loaded_weight_bytes(spec, checkpoint, mtp_enabled=False)
    gc.collect()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    started = time.monotonic()
    model = build_on_gpu(config)
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated() - before
    params = sum(p.numel() for p in model.parameters())
    row = {
        "model": name,
        "class": type(model).__name__,
        "planner_bytes": planned,
        "allocated_bytes": allocated,
        "planner_params": spec.params.total - spec.params.mtp,
        "torch_params": params,
        "diff": (planned - allocated) / allocated,
        "seconds": time.monotonic() - started,
    }
    del model
    gc.collect()
    torch.cuda.empty_cache()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=Path, default=ROOT / "bot" / "simhost" / "configs")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gpu_weights_check.txt")
    parser.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    parser.add_argument("--budget-s", type=float, default=240, help="skip the remaining models after this long")
    args = parser.parse_args()

    lines: list[str] = []

    def emit(text: str) -> None:
        print(text, flush=True)
        lines.append(text)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")

    try:
        import torch
        import transformers
    except ImportError as exc:
        emit(f"cannot run: {exc}")
        return 2
    if not torch.cuda.is_available():
        emit("cannot run: no CUDA device")
        return 2
    emit(
        f"# planner weight bytes (parameters x dtype path) vs torch.cuda.memory_allocated(), tolerance {TOLERANCE:.0%}"
    )
    emit(
        f"# {torch.cuda.get_device_name(0)}; torch {torch.__version__}; transformers {transformers.__version__}; "
        f"python {platform.python_version()}"
    )
    emit(
        f"{'model':<26} {'class':<38} {'planner GiB':>11} {'GPU GiB':>9} {'diff':>7} {'planner params':>15} "
        f"{'torch params':>13} {'build s':>7}  verdict"
    )
    started = time.monotonic()
    failures = 0
    for name in args.models:
        if time.monotonic() - started > args.budget_s:
            emit(f"{name:<26} skipped: time budget of {args.budget_s:.0f} s spent")
            continue
        config = json.loads((args.configs / f"{name}.json").read_text())
        try:
            row = check(name, config)
        except Exception as exc:  # noqa: BLE001 - one model failing to build must not hide the others' figures
            emit(f"{name:<26} not built: {type(exc).__name__}: {str(exc)[:160]}")
            continue
        ok = abs(row["diff"]) <= TOLERANCE
        failures += 0 if ok else 1
        emit(
            f"{name:<26} {row['class']:<38} {row['planner_bytes'] / 2**30:>11.2f} "
            f"{row['allocated_bytes'] / 2**30:>9.2f} "
            f"{row['diff']:>+7.2%} {row['planner_params']:>15,} {row['torch_params']:>13,} {row['seconds']:>7.1f}  "
            + ("ok" if ok else "OUTSIDE TOLERANCE")
        )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
