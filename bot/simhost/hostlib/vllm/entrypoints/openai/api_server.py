"""The simulated vLLM OpenAI-compatible server: `python -m vllm.entrypoints.openai.api_server --model ...` and
`vllm serve MODEL ...`. Prints vLLM's V1 startup lines with their process prefixes, binds the port early (as
run_server does), serves /health once the engine is up, then throughput lines."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time

from simengine.engine import EngineCrash, SimEngine
from simengine.modelinfo import read_model
import vllm
from vllm.config import ModelConfig, SpeculativeConfig
from simengine.argspec import capture_dir, print_help_and_exit
from vllm.entrypoints.openai.cli_args import make_arg_parser, non_default_args, normalize_underscores
from vllm.v1.engine.core import EngineCore
from vllm.version import __version__
from simengine.exposition import vllm_text

# (file, line) tags of the real log lines; line numbers drift between releases and nobody should match on them
TAGS = {
    "api": "api_server.py:1772",
    "utils": "utils.py:253",
    "model": "model.py:547",
    "core": "core.py:93",
    "state": "parallel_state.py:1208",
    "runner": "gpu_model_runner.py:2602",
    "loader": "default_loader.py:267",
    "worker": "gpu_worker.py:298",
    "kv": "kv_cache_utils.py:1087",
    "graph": "gpu_model_runner.py:3480",
    "core_init": "core.py:210",
    "launcher": "launcher.py:34",
    "loggers": "loggers.py:123",
    "spec": "metrics.py:96",
    "fail": "core.py:718",
    "arg": "arg_utils.py:1295",
}


class VLLMEngine(SimEngine):
    name = "vllm"

    def __init__(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
        served = (args.served_model_name or [args.model])[0]
        super().__init__(
            model_path=args.model,
            served_model_name=served,
            host=args.host or "0.0.0.0",
            port=args.port,
            tp=args.tensor_parallel_size,
        )
        self.args = args
        self.parser = parser
        self.spec: SpeculativeConfig | None = None
        self.core: EngineCore | None = None

    def log(self, message: str, proc: str = "APIServer", level: str = "INFO", tag: str = "api") -> None:
        stamp = time.strftime("%m-%d %H:%M:%S")
        self.out.write(f"({proc} pid={self.pid}) {level} {stamp} [{TAGS[tag]}] {message}")

    def log_access(self, line: str) -> None:
        self.out.write(f"(APIServer pid={self.pid}) INFO:     {line}")

    def plain(self, message: str, proc: str = "APIServer") -> None:
        self.out.write(f"({proc} pid={self.pid}) {message}")

    def log_shutdown(self, line: str) -> None:
        self.plain(line)

    # ----------------------------------------------------------------------------------------- failures
    def api_server_failed(self) -> EngineCrash:
        for line in self.traceback_text().splitlines():
            self.plain(line)
        return EngineCrash(1)

    def engine_core_failed(self) -> EngineCrash:
        """vLLM V1 framing: the engine core logs its traceback, then the API server raises its own."""
        cause = self.traceback_text()
        self.log("EngineCore failed to start.", proc="EngineCore_DP0", level="ERROR", tag="fail")
        for line in cause.splitlines():
            self.log(line, proc="EngineCore_DP0", level="ERROR", tag="fail")
        try:
            raise RuntimeError(
                "Engine core initialization failed. See root cause above. Failed core proc(s): {}"
            ) from None  # the cause was logged by the engine core above, as vLLM does
        except RuntimeError:
            return self.api_server_failed()

    # ----------------------------------------------------------------------------------------- startup
    def startup(self) -> None:
        args = self.args
        self.log(f"vLLM API server version {__version__}")
        self.log(f"non-default args: {non_default_args(args, self.parser)}", tag="utils")
        crash = self.crash_log()
        if crash is not None:
            raise EngineCrash(
                self.replay_crash(
                    crash, lambda: self.log(f"Resolved architecture: {self.architecture_hint()}", tag="model")
                )
            )
        holder = self.hold_port_elsewhere() if self.port_conflict() else None

        try:
            facts = read_model(args.model)
            config = ModelConfig(facts, __version__, args.max_model_len, args.tensor_parallel_size)
            self.log(f"Resolved architecture: {facts.architecture}", tag="model")
            self.log(f"Using max model len {config.max_model_len}", tag="model")
            if args.speculative_config is not None:
                self.spec = SpeculativeConfig(args.speculative_config, facts, __version__)
                if self.spec.deprecated_method:
                    self.log(
                        f"method `{self.spec.deprecated_method}` is deprecated and replaced with mtp.",
                        level="WARNING",
                        tag="arg",
                    )
        except Exception:
            raise self.api_server_failed() from None
        self.context_length = config.max_model_len
        if (args.quantization == "fp8" or facts.fp8_checkpoint) and float(self.state["gpus"][0]["compute_cap"]) < 8.9:
            self.log(
                "Your GPU does not have native support for FP8 computation but FP8 quantization is being used. "
                "Weight-only FP8 compression will be used leveraging the Marlin kernel. This may degrade "
                "performance for compute-heavy workloads.",
                proc="Worker_TP0",
                level="WARNING",
                tag="runner",
            )

        try:
            self.bind_port()  # run_server binds before building the engine
        except OSError:
            raise self.api_server_failed() from None
        finally:
            if holder is not None:
                holder.close()

        self.at(0.05)
        self.log(
            f"Initializing a V1 LLM engine (v{__version__}) with config: model='{args.model}', "
            f"speculative_config={self.spec!r}, tokenizer='{args.tokenizer or args.model}', skip_tokenizer_init=False, "
            f"tokenizer_mode={args.tokenizer_mode}, revision={args.revision}, "
            f"trust_remote_code={args.trust_remote_code}, "
            f"dtype=torch.bfloat16, max_seq_len={config.max_model_len}, download_dir={args.download_dir!r}, "
            f"load_format={args.load_format}, tensor_parallel_size={args.tensor_parallel_size}, "
            f"pipeline_parallel_size={args.pipeline_parallel_size}, data_parallel_size={args.data_parallel_size}, "
            f"disable_custom_all_reduce={args.disable_custom_all_reduce}, quantization={args.quantization}, "
            f"enforce_eager={args.enforce_eager}, kv_cache_dtype={args.kv_cache_dtype}, device_config=cuda, "
            f"served_model_name={self.served_model_name}, "
            f"enable_prefix_caching={args.enable_prefix_caching is not False}",
            proc="EngineCore_DP0",
            tag="core",
        )
        core = self.core = EngineCore(self, facts, args, config.max_model_len)
        began = time.monotonic()
        try:
            self.at(0.1)
            core.init_workers()
            for w in core.workers:
                tp = args.tensor_parallel_size
                self.log(
                    f"rank {w.rank} in world size {tp} is assigned as DP rank 0, PP rank 0, TP rank {w.rank}, "
                    f"EP rank {w.rank}",
                    proc=f"Worker_TP{w.rank}",
                    tag="state",
                )
            self.register_memory(500)
            self.at(0.15)
            self.log(f"Starting to load model {args.model}...", proc="Worker_TP0", tag="runner")
            core.load_model()
            self.at(0.2)
            self.out.write(
                f"Loading safetensors checkpoint shards:   0% Completed | 0/{facts.shard_count} [00:00<?, ?it/s]"
            )
            self.at(0.45)
            took = time.monotonic() - began
            self.out.write(
                f"Loading safetensors checkpoint shards: 100% Completed | {facts.shard_count}/{facts.shard_count} "
                f"[00:{int(took):02d}<00:00, {facts.shard_count / max(took, 0.01):5.2f}it/s]"
            )
            self.at(0.5)
            self.log(f"Loading weights took {took:.2f} seconds", proc="Worker_TP0", tag="loader")
            self.log(
                f"Model loading took {core.workers[0].weights_gib:.4f} GiB memory and {took + 0.4:.6f} seconds",
                proc="Worker_TP0",
                tag="runner",
            )
            self.register_memory(core.workers[0].used_mib)
            self.at(0.55)
            available = core.initialize_kv_caches()
        except EngineCrash:
            raise
        except Exception:
            raise self.engine_core_failed() from None
        self.log(f"Available KV cache memory: {available:.2f} GiB", proc="Worker_TP0", tag="worker")
        self.log(f"GPU KV cache size: {core.kv_tokens:,} tokens", proc="EngineCore_DP0", tag="kv")
        self.log(
            f"Maximum concurrency for {config.max_model_len:,} tokens per request: "
            f"{core.kv_tokens / config.max_model_len:.2f}x",
            proc="EngineCore_DP0",
            tag="kv",
        )
        self.register_memory(core.workers[0].used_mib)
        if not args.enforce_eager:
            self.at(0.65)
            self.out.write(
                "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): "
                "100%|██████████| 51/51 [00:00<00:00, 61.20it/s]"
            )
            self.out.write("Capturing CUDA graphs (decode, FULL): 100%|██████████| 35/35 [00:00<00:00, 70.02it/s]")
            self.log(
                f"Graph capturing finished in 1 secs, took {core.workers[0].graph_gib:.2f} GiB",
                proc="Worker_TP0",
                tag="graph",
            )
        self.at(0.75)
        self.log(
            f"init engine (profile, create kv cache, warmup model) took {time.monotonic() - began:.2f} seconds",
            proc="EngineCore_DP0",
            tag="core_init",
        )

        self.at(0.85)
        self.log("Supported tasks: ['generate']")
        self.log(f"Starting vLLM API server 0 on http://{self.host}:{self.port}")
        self.log("Available routes are:", tag="launcher")
        for route, methods in (
            ("/health", "GET"),
            ("/v1/models", "GET"),
            ("/version", "GET"),
            ("/v1/chat/completions", "POST"),
            ("/v1/completions", "POST"),
            ("/metrics", "GET"),
        ):
            self.log(f"Route: {route}, Methods: {methods}", tag="launcher")
        self.at(1.0)
        self.plain(f"INFO:     Started server process [{self.pid}]")
        self.plain("INFO:     Waiting for application startup.")
        n = self.spec.num_speculative_tokens if self.spec else 0
        self.start_load(self.core.kv_tokens if self.core else 1, spec_tokens=n or 0,
                        accept_length=1.0 + 0.7 * (n or 0))
        self.ready.set()
        self.serve()
        self.plain("INFO:     Application startup complete.")

    def architecture_hint(self) -> str:
        try:
            with open(os.path.join(self.args.model, "config.json")) as handle:
                return (json.load(handle).get("architectures") or ["?"])[0]
        except (OSError, ValueError):
            return "?"

    # ----------------------------------------------------------------------------------------- serving
    def metrics_text(self) -> str | None:
        if self.load is None:
            return None
        version = tuple(int(p) for p in re.findall(r"\d+", __version__)[:3])
        return vllm_text(self.load.snapshot(), self.served_model_name, version, speculative=self.spec is not None)

    def periodic_line(self, tick: int) -> list[str]:
        generation = 38.0 + random.uniform(-3, 3)
        tokens = max(self.core.kv_tokens if self.core else 1, 1)
        usage = 100 * (150 + 40 * tick) / tokens
        lines = [
            f"Engine 000: Avg prompt throughput: {15.8 if tick == 1 else 0.0:.1f} tokens/s, Avg generation throughput: "
            f"{generation:.1f} tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: {usage:.1f}%, "
            "Prefix cache hit rate: 0.0%"
        ]
        if self.spec is not None:
            n = self.spec.num_speculative_tokens
            rates = [max(0.05, 0.82 - 0.18 * i + random.uniform(-0.05, 0.05)) for i in range(n)]
            accepted = sum(rates)
            drafted = int(generation / (1 + accepted) * n * 2)
            lines.append(
                f"SpecDecoding metrics: Mean acceptance length: {1 + accepted:.2f}, Accepted throughput: "
                f"{generation * accepted / (1 + accepted):.2f} tokens/s, "
                f"Drafted throughput: {drafted / 2:.2f} tokens/s, "
                f"Accepted: {int(drafted * accepted / n)} tokens, Drafted: {drafted} tokens, Per-position acceptance "
                f"rate: {', '.join(f'{r:.3f}' for r in rates)}, Avg Draft acceptance rate: {100 * accepted / n:.1f}%"
            )
        return lines

    def log_periodic(self, line: str) -> None:
        self.log(line, tag="spec" if line.startswith("SpecDecoding") else "loggers")


def run_server(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not args.model:
        parser.error("the following arguments are required: --model")
    return VLLMEngine(args, parser).main()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print_help_and_exit(capture_dir(vllm.__file__), argv)
    parser = make_arg_parser()
    args = parser.parse_args(normalize_underscores(argv))
    return run_server(args, parser)


if __name__ == "__main__":
    sys.exit(main())
