"""ServerArgs of the simulated SGLang: the parser is the real release's (its options, aliases, choices and defaults
captured by tools/capture_engine_help.py, see simengine/argspec.py), and the checks that run while the arguments
are prepared (speculative decoding parameters, hybrid-model radix cache) raise the way SGLang raises them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import sglang
from simengine.argspec import capture_dir, captured_parser, print_help_and_exit

#: Newer releases store some settings under new names; the simulation reads them as the field it models.
RENAMED_FIELDS = {
    "tensor_parallel_size": "tp_size",
    "mamba_radix_cache_strategy": "mamba_scheduler_strategy",
    "cuda_graph_max_bs_decode": "cuda_graph_max_bs",
}
#: "auto" resolves to no_buffer in the releases whose ServerArgs this models (0.5.11: "when extra_buffer is more
#: verified, we can set the default path based on [overlap, non-overlap]").
NO_BUFFER = ("no_buffer", "auto")


def warn(message: str) -> None:
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {message}", flush=True)


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    tokenizer_path: str | None = None
    host: str = "127.0.0.1"
    port: int = 30000
    tp_size: int = 1
    dp_size: int = 1
    pp_size: int = 1
    ep_size: int = 1
    base_gpu_id: int = 0
    #: Multi-node tensor parallelism (--nnodes N --node-rank R --dist-init-addr HEAD:PORT): each node runs
    #: tp_size / nnodes ranks; only node 0 serves HTTP (SGLang's non-zero rank nodes run their schedulers only).
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: str | None = None
    trust_remote_code: bool = False
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    mem_fraction_static: float | None = None
    context_length: int | None = None
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    max_prefill_tokens: int = 16384
    chunked_prefill_size: int | None = None
    cuda_graph_max_bs: int | None = None
    disable_cuda_graph: bool = False
    served_model_name: str | None = None
    attention_backend: str | None = None
    disable_radix_cache: bool = False
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None
    log_level: str = "info"
    log_requests: bool = False
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_dflash_block_size: int | None = None
    speculative_dflash_draft_window_size: int | None = None
    pp_size: int = 1
    mamba_scheduler_strategy: str = "no_buffer"
    mamba_ssm_dtype: str = "float32"
    max_mamba_cache_size: int | None = None
    mamba_full_memory_ratio: float = 0.9
    mamba_track_interval: int = 256
    enable_torch_compile: bool = False
    disable_custom_all_reduce: bool = False
    disable_overlap_schedule: bool = False
    enable_dp_attention: bool = False
    enable_mixed_chunk: bool = False
    enable_metrics: bool = False
    enable_flashinfer_allreduce_fusion: bool = False
    api_key: str | None = None
    stream_interval: int = 1
    page_size: int = 1
    random_seed: int | None = None
    download_dir: str | None = None
    load_format: str = "auto"
    revision: str | None = None
    skip_server_warmup: bool = False
    watchdog_timeout: float = 300
    tokenizer_worker_num: int = 1
    chat_template: str | None = None
    is_embedding: bool = False
    json_model_override_args: str = "{}"
    grammar_backend: str | None = None
    sampling_backend: str | None = None

    def __post_init__(self) -> None:
        if self.tokenizer_path is None:
            self.tokenizer_path = self.model_path
        if self.served_model_name is None:
            self.served_model_name = self.model_path
        self._handle_speculative_decoding()

    def model_architecture(self) -> str | None:
        try:
            config = json.loads((Path(self.model_path) / "config.json").read_text())
        except (OSError, ValueError):
            return None
        return (config.get("architectures") or [None])[0]

    def is_hybrid_linear_model(self) -> bool:
        try:
            config = json.loads((Path(self.model_path) / "config.json").read_text())
        except (OSError, ValueError):
            return False
        text = config.get("text_config") or config
        return "linear_attention" in (text.get("layer_types") or [])

    def draft_block_size(self) -> int | None:
        """The DFlash draft config's block_size: dflash_config first, then the top level (dflash_utils.py)."""
        try:
            config = json.loads((Path(self.speculative_draft_model_path or "") / "config.json").read_text())
        except (OSError, ValueError):
            return None
        value = (config.get("dflash_config") or {}).get("block_size", config.get("block_size"))
        return value if isinstance(value, int) else None

    def _handle_dflash(self) -> None:
        """SGLang 0.5.11 server_args.py, DFLASH branch: its ValueErrors and rewrites, in its order."""
        if self.enable_dp_attention:
            raise ValueError("Currently DFLASH speculative decoding does not support dp attention.")
        if self.pp_size != 1:
            raise ValueError("Currently DFLASH speculative decoding only supports pp_size == 1.")
        if self.speculative_draft_model_path is None:
            raise ValueError("DFLASH speculative decoding requires setting --speculative-draft-model-path.")
        self.speculative_num_steps = 1
        self.speculative_eagle_topk = 1
        if self.speculative_dflash_block_size is not None:
            if self.speculative_num_draft_tokens is not None and int(self.speculative_num_draft_tokens) != int(
                self.speculative_dflash_block_size
            ):
                raise ValueError(
                    "Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set but they differ. "
                    "For DFLASH they must match. "
                    f"speculative_num_draft_tokens={self.speculative_num_draft_tokens}, "
                    f"speculative_dflash_block_size={self.speculative_dflash_block_size}."
                )
            self.speculative_num_draft_tokens = int(self.speculative_dflash_block_size)
        if self.speculative_num_draft_tokens is None:
            self.speculative_num_draft_tokens = self.draft_block_size() or 16
        if self.max_running_requests is None:
            self.max_running_requests = 48
            warn(
                "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
                "setting --max-running-requests."
            )
        self.disable_overlap_schedule = True
        warn("Overlap scheduler is disabled when using DFLASH speculative decoding (spec v2 is not supported yet).")

    def _check_hybrid_radix_cache(self) -> None:
        """Every speculative algorithm on a hybrid model (server_args.py 0.5.11, _handle_model_specific_adjustments)."""
        if not self.disable_radix_cache and self.mamba_scheduler_strategy in NO_BUFFER:
            raise ValueError(
                f"Speculative decoding for {self.model_architecture()} is not compatible with radix cache when "
                "using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use "
                "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
            )

    def _handle_speculative_decoding(self) -> None:
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"
        if self.speculative_algorithm in ("EAGLE", "EAGLE3", "STANDALONE", "DFLASH") and self.is_hybrid_linear_model():
            self._check_hybrid_radix_cache()
        if self.speculative_algorithm == "DFLASH":
            self._handle_dflash()
            return
        if self.speculative_algorithm not in ("EAGLE", "EAGLE3", "STANDALONE"):
            return
        if self.max_running_requests is None:
            self.max_running_requests = 48
            warn(
                "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
                "setting --max-running-requests."
            )
        if self.speculative_num_steps is None:
            assert self.speculative_eagle_topk is None and self.speculative_num_draft_tokens is None
            (
                self.speculative_num_steps,
                self.speculative_eagle_topk,
                self.speculative_num_draft_tokens,
            ) = auto_choose_speculative_params(self)
        if self.speculative_eagle_topk == 1 and self.speculative_num_draft_tokens != self.speculative_num_steps + 1:
            warn(
                "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
            )
            self.speculative_num_draft_tokens = self.speculative_num_steps + 1


def auto_choose_speculative_params(self: ServerArgs) -> tuple[int, int, int]:
    if self.speculative_algorithm == "STANDALONE":
        return (3, 1, 4)
    if self.model_architecture() in ("LlamaForCausalLM", "Grok1ForCausalLM"):
        return (5, 4, 8)
    return (3, 1, 4)


def make_parser() -> argparse.ArgumentParser:
    return captured_parser(capture_dir(sglang.__file__))


def prepare_server_args(argv: list[str]) -> ServerArgs:
    print_help_and_exit(capture_dir(sglang.__file__), argv)
    args = make_parser().parse_args(argv)  # unknown flags: "launch_server.py: error: unrecognized arguments: ..."
    known = {field.name for field in dataclasses.fields(ServerArgs)}
    # None is the release's "decide later" default, which its own __post_init__ resolves; the simulation's field
    # defaults stand for those resolved values
    values = {RENAMED_FIELDS.get(k, k): v for k, v in vars(args).items() if v is not None}
    return ServerArgs(**{k: v for k, v in values.items() if k in known})
