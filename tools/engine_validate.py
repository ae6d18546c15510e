"""Inside an engine release's throwaway venv: run the engine's own validation over a batch of launch lines.

    python engine_validate.py sglang|vllm plans.json results.json

plans.json: [{"id": ..., "argv": [engine args], "env": {...}}]; every plan of one batch runs on the same simulated
GPU kind (the sitecustomize of tools/engine_check.py patched the device queries before the engine was imported).

SGLang: ``prepare_server_args(argv)`` (argparse, then ServerArgs.__post_init__ with its resolution and checks),
``check_server_args()`` where the release has it, then ``ModelConfig.from_server_args`` (where the context length
is checked against the model's). vLLM: its parser (``make_arg_parser(FlexibleArgumentParser())``),
``AsyncEngineArgs.from_cli_args`` and ``create_engine_config()`` (ModelConfig, ParallelConfig, SpeculativeConfig,
the platform's own adjustments). The verdict is the first exception with the engine's own message.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback


def validate_sglang(argv: list[str]) -> None:
    from sglang.srt.server_args import prepare_server_args

    server_args = prepare_server_args(argv)
    if hasattr(server_args, "resolve_once"):  # 0.5.2x: resolution left __post_init__ (entrypoints/engine.py order)
        server_args.resolve_once()
    if hasattr(server_args, "check_server_args"):
        server_args.check_server_args()
    from sglang.srt.configs.model_config import ModelConfig

    model_config = ModelConfig.from_server_args(server_args)
    build_sglang_qkv_layer(server_args, model_config)


def build_sglang_qkv_layer(server_args, model_config) -> None:
    """SGLang checks that TP divides the attention heads only when it builds the layers (argument validation and
    ModelConfig accept TP 3 on 32 heads). Build the layer where that check lives, SGLang's own QKVParallelLinear
    (sglang/srt/layers/linear.py: ``divide(total_num_heads, tp_size)``, and the KV heads divided or replicated),
    for this model's head counts as SGLang's ModelConfig reads them, on the meta device (no memory), as TP rank 0
    of the plan's TP group. 0.5.9-0.5.11 take the TP size as an argument; 0.5.2x reads it from the published
    process context, which the scheduler process publishes (managers/scheduler.py run_scheduler_process) before
    it builds the model."""
    import inspect

    import torch
    from sglang.srt.layers.linear import QKVParallelLinear

    attention_tp = server_args.tp_size // (server_args.dp_size if server_args.enable_dp_attention else 1)
    layer = dict(hidden_size=model_config.hidden_size, head_size=model_config.head_dim,
                 total_num_heads=model_config.num_attention_heads,
                 total_num_kv_heads=model_config.get_total_num_kv_heads(), bias=False)
    with torch.device("meta"):
        if "tp_size" in inspect.signature(QKVParallelLinear.__init__).parameters:
            QKVParallelLinear(**layer, tp_rank=0, tp_size=attention_tp)
            return
        from sglang.srt.runtime_context import SpawnRanks, publish, spawn_world_rank

        publish(server_args, role="scheduler",
                ranks=SpawnRanks(world_rank=spawn_world_rank(server_args, tp_rank=0, pp_rank=0), dp_rank=None,
                                 gpu_id=0))
        QKVParallelLinear(**layer)


def vllm_parser():
    try:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    except ModuleNotFoundError:
        from vllm.entrypoints.common.cli_args import make_arg_parser
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    return make_arg_parser(FlexibleArgumentParser())


def validate_vllm(argv: list[str]) -> None:
    from vllm.engine.arg_utils import AsyncEngineArgs

    args = vllm_parser().parse_args(argv)
    engine_args = AsyncEngineArgs.from_cli_args(args)
    engine_args.create_engine_config()


def message_of(error: BaseException, stderr: str) -> str:
    if isinstance(error, SystemExit):  # argparse: the message is what it printed
        lines = [line for line in stderr.splitlines() if "error:" in line]
        return lines[-1] if lines else f"SystemExit({error.code})"
    text = f"{type(error).__name__}: {error}"
    return text[:1500]


def run_one(engine: str, plan: dict) -> dict:
    saved = dict(os.environ)
    os.environ.update(plan.get("env", {}))
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            (validate_sglang if engine == "sglang" else validate_vllm)(plan["argv"])
        return {"id": plan["id"], "accepted": True}
    except BaseException as error:  # noqa: BLE001 - every refusal the engine raises is the result
        where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        return {
            "id": plan["id"],
            "accepted": False,
            "message": message_of(error, stderr.getvalue()),
            "where": f"{where.filename.split('site-packages/')[-1]}:{where.lineno} in {where.name}" if where else None,
        }
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main() -> int:
    engine, plans_file, results_file = sys.argv[1:4]
    plans = json.loads(open(plans_file).read())
    results = [run_one(engine, plan) for plan in plans]
    with open(results_file, "w") as out:
        json.dump(results, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
