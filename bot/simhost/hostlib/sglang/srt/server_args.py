"""ServerArgs of the simulated SGLang: the real flag names and aliases, and the real checks that run while the
arguments are prepared (speculative decoding parameters, hybrid-model radix cache), raised the way SGLang raises them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

QUANTIZATION_CHOICES = [
    "awq",
    "fp8",
    "gptq",
    "marlin",
    "gptq_marlin",
    "awq_marlin",
    "bitsandbytes",
    "gguf",
    "modelopt",
    "modelopt_fp4",
    "w8a8_int8",
    "w8a8_fp8",
    "moe_wna16",
    "qoq",
    "compressed-tensors",
    "mxfp4",
]
ATTENTION_BACKEND_CHOICES = [
    "triton",
    "torch_native",
    "flex_attention",
    "flashinfer",
    "fa3",
    "fa4",
    "flashmla",
    "cutlass_mla",
    "trtllm_mla",
    "trtllm_mha",
    "aiter",
    "wave",
    "intel_amx",
    "ascend",
]
SPECULATIVE_ALGORITHM_CHOICES = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]


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

    def _handle_speculative_decoding(self) -> None:
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"
        if self.speculative_algorithm not in ("EAGLE", "EAGLE3", "STANDALONE"):
            return
        if self.max_running_requests is None:
            self.max_running_requests = 48
            warn(
                "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
                "setting --max-running-requests."
            )
        if (
            self.is_hybrid_linear_model()
            and not self.disable_radix_cache
            and self.mamba_scheduler_strategy == "no_buffer"
        ):
            raise ValueError(
                f"Speculative decoding for {self.model_architecture()} is not compatible with radix cache when using "
                "--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use "
                "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
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
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--model-path",
        "--model",
        type=str,
        required=True,
        dest="model_path",
        help="The path of the model weights. This can be a local folder or a Hugging Face repo ID.",
    )
    parser.add_argument("--tokenizer-path", type=str, help="The path of the tokenizer.")
    parser.add_argument("--host", type=str, default="127.0.0.1", help="The host of the HTTP server.")
    parser.add_argument("--port", type=int, default=30000, help="The port of the HTTP server.")
    parser.add_argument(
        "--tp-size",
        "--tp",
        "--tensor-parallel-size",
        type=int,
        default=1,
        dest="tp_size",
        help="The tensor parallelism size.",
    )
    parser.add_argument(
        "--dp-size",
        "--dp",
        "--data-parallel-size",
        type=int,
        default=1,
        dest="dp_size",
        help="The data parallelism size.",
    )
    parser.add_argument(
        "--pp-size",
        "--pipeline-parallel-size",
        type=int,
        default=1,
        dest="pp_size",
        help="The pipeline parallelism size.",
    )
    parser.add_argument(
        "--ep-size",
        "--ep",
        "--expert-parallel-size",
        type=int,
        default=1,
        dest="ep_size",
        help="The expert parallelism size.",
    )
    parser.add_argument("--base-gpu-id", type=int, default=0, help="The base GPU ID to start allocating GPUs from.")
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="Whether or not to allow for custom models defined on the Hub in their own modeling files.",
    )
    parser.add_argument(
        "--dtype",
        type=str,
        default="auto",
        choices=["auto", "half", "float16", "bfloat16", "float", "float32"],
        help="Data type for model weights and activations.",
    )
    parser.add_argument("--quantization", type=str, choices=QUANTIZATION_CHOICES, help="The quantization method.")
    parser.add_argument(
        "--kv-cache-dtype",
        type=str,
        default="auto",
        choices=["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"],
        help="Data type for kv cache storage. 'auto' will use model data type.",
    )
    parser.add_argument(
        "--mem-fraction-static",
        type=float,
        help="The fraction of the memory used for static allocation (model weights and KV cache memory pool). "
        "Use a smaller value if you see out-of-memory errors.",
    )
    parser.add_argument(
        "--context-length",
        type=int,
        help="The model's maximum context length. Defaults to None "
        "(will use the value from the model's config.json instead).",
    )
    parser.add_argument("--max-running-requests", type=int, help="The maximum number of running requests.")
    parser.add_argument("--max-total-tokens", type=int, help="The maximum number of tokens in the memory pool.")
    parser.add_argument(
        "--max-prefill-tokens", type=int, default=16384, help="The maximum number of tokens in a prefill batch."
    )
    parser.add_argument(
        "--chunked-prefill-size",
        type=int,
        help="The maximum number of tokens in a chunk for the chunked prefill. "
        "Setting this to -1 means disabling chunked prefill.",
    )
    parser.add_argument("--cuda-graph-max-bs", type=int, help="Set the maximum batch size for cuda graph.")
    parser.add_argument("--disable-cuda-graph", action="store_true", help="Disable cuda graph.")
    parser.add_argument(
        "--served-model-name",
        type=str,
        help="Override the model name returned by the v1/models endpoint in OpenAI API server.",
    )
    parser.add_argument(
        "--attention-backend",
        type=str,
        choices=ATTENTION_BACKEND_CHOICES,
        help="Choose the kernels for attention layers.",
    )
    parser.add_argument("--disable-radix-cache", action="store_true", help="Disable RadixAttention for prefix caching.")
    parser.add_argument("--reasoning-parser", type=str, help="Specify the parser for reasoning models.")
    parser.add_argument("--tool-call-parser", type=str, help="Specify the parser for handling tool-call interactions.")
    parser.add_argument("--log-level", type=str, default="info", help="The logging level of all loggers.")
    parser.add_argument("--log-requests", action="store_true", help="Log metadata, inputs, outputs of all requests.")
    parser.add_argument(
        "--speculative-algorithm", type=str, choices=SPECULATIVE_ALGORITHM_CHOICES, help="Speculative algorithm."
    )
    parser.add_argument(
        "--speculative-draft-model-path",
        "--speculative-draft-model",
        type=str,
        dest="speculative_draft_model_path",
        help="The path of the draft model weights.",
    )
    parser.add_argument(
        "--speculative-num-steps",
        type=int,
        help="The number of steps sampled from draft model in Speculative Decoding.",
    )
    parser.add_argument(
        "--speculative-eagle-topk",
        type=int,
        help="The number of tokens sampled from the draft model in eagle2 each step.",
    )
    parser.add_argument(
        "--speculative-num-draft-tokens",
        type=int,
        help="The number of tokens sampled from the draft model in Speculative Decoding.",
    )
    parser.add_argument(
        "--mamba-scheduler-strategy",
        type=str,
        default="no_buffer",
        choices=["no_buffer", "extra_buffer"],
        help="The strategy to use for mamba scheduler.",
    )
    parser.add_argument(
        "--mamba-ssm-dtype",
        type=str,
        default="float32",
        choices=["float32", "bfloat16"],
        help="The data type of the SSM states in mamba cache.",
    )
    parser.add_argument("--max-mamba-cache-size", type=int, help="The maximum size of the mamba cache.")
    parser.add_argument(
        "--mamba-full-memory-ratio",
        type=float,
        default=0.9,
        help="The ratio of mamba state memory to full kv cache memory.",
    )
    parser.add_argument("--mamba-track-interval", type=int, default=256, help="The interval to track the mamba state.")
    parser.add_argument("--enable-torch-compile", action="store_true", help="Optimize the model with torch.compile.")
    parser.add_argument(
        "--disable-custom-all-reduce", action="store_true", help="Disable the custom all-reduce kernel."
    )
    parser.add_argument("--disable-overlap-schedule", action="store_true", help="Disable the overlap scheduler.")
    parser.add_argument("--enable-dp-attention", action="store_true", help="Enable data parallelism for attention.")
    parser.add_argument(
        "--enable-mixed-chunk", action="store_true", help="Enabling mixing prefill and decode in a batch."
    )
    parser.add_argument("--enable-metrics", action="store_true", help="Enable log prometheus metrics.")
    parser.add_argument(
        "--enable-flashinfer-allreduce-fusion", action="store_true", help="Enable FlashInfer allreduce fusion."
    )
    parser.add_argument("--api-key", type=str, help="Set API key of the server.")
    parser.add_argument(
        "--stream-interval",
        type=int,
        default=1,
        help="The interval (or buffer size) for streaming in terms of the token length.",
    )
    parser.add_argument("--page-size", type=int, default=1, help="The number of tokens in a page.")
    parser.add_argument("--random-seed", type=int, help="The random seed.")
    parser.add_argument("--download-dir", type=str, help="Model download directory for huggingface.")
    parser.add_argument("--load-format", type=str, default="auto", help="The format of the model weights to load.")
    parser.add_argument("--revision", type=str, help="The specific model version to use.")
    parser.add_argument("--skip-server-warmup", action="store_true", help="If set, skip warmup.")
    parser.add_argument("--watchdog-timeout", type=float, default=300, help="Set watchdog timeout in seconds.")
    parser.add_argument("--tokenizer-worker-num", type=int, default=1, help="The worker num of the tokenizer manager.")
    parser.add_argument(
        "--chat-template", type=str, help="The buliltin chat template name or the path of the chat template file."
    )
    parser.add_argument("--is-embedding", action="store_true", help="Whether to use a CausalLM as an embedding model.")
    parser.add_argument(
        "--json-model-override-args",
        type=str,
        default="{}",
        help="A dictionary in JSON string format used to override default model configurations.",
    )
    parser.add_argument("--grammar-backend", type=str, help="Choose the backend for grammar-guided decoding.")
    parser.add_argument("--sampling-backend", type=str, help="Choose the kernels for sampling layers.")
    return parser


def prepare_server_args(argv: list[str]) -> ServerArgs:
    args = make_parser().parse_args(argv)  # unknown flags: "launch_server.py: error: unrecognized arguments: ..."
    return ServerArgs(**vars(args))
