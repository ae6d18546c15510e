"""The simulated SGLang server process: the real startup lines in the real order, the HTTP port, the warm-up,
"The server is fired up and ready to roll!", then decode lines. Failures print as SGLang prints them."""

from __future__ import annotations

import os
import random
import time

from sglang.srt.model_executor.model_runner import ModelRunner, default_memory_settings
from sglang.srt.server_args import ServerArgs
from sglang.version import __version__
from simengine.engine import EngineCrash, SimEngine
from simengine.exposition import sglang_text
from simengine.modelinfo import ModelFacts, read_model


class SGLangEngine(SimEngine):
    name = "sglang"

    def __init__(self, server_args: ServerArgs) -> None:
        super().__init__(
            model_path=server_args.model_path,
            served_model_name=server_args.served_model_name or server_args.model_path,
            host=server_args.host,
            port=server_args.port,
            tp=server_args.tp_size,
        )
        self.args = server_args
        self.runners: list[ModelRunner] = []
        self.accept_len = 1.0

    def log(self, message: str, rank: int | None = None) -> None:
        tag = f" TP{rank}" if rank is not None else ""
        self.out.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}{tag}] {message}")

    # ----------------------------------------------------------------------------------------- failures
    def scheduler_failed(self) -> EngineCrash:
        """The scheduler subprocess's framing of an exception; the parent then sees SIGQUIT."""
        self.log(f"Scheduler hit an exception: {self.traceback_text()}", rank=0)
        self.out.write("")
        self.log("Received sigquit from a child process. It usually means the child failed.")
        return EngineCrash(1)

    def main_failed(self) -> EngineCrash:
        self.out.write(self.traceback_text())
        return EngineCrash(1)

    # ----------------------------------------------------------------------------------------- startup
    def startup(self) -> None:
        args = self.args
        self.log(f"server_args={args!r}")
        crash = self.crash_log()
        if crash is not None:
            raise EngineCrash(self.replay_crash(crash, lambda: self.log("Init torch distributed begin.", rank=0)))
        holder = self.hold_port_elsewhere() if self.port_conflict() else None

        try:
            facts = read_model(args.model_path)
        except Exception:
            raise self.main_failed() from None
        context_len = args.context_length or facts.max_position_embeddings
        if (
            args.context_length
            and args.context_length > facts.max_position_embeddings
            and not os.environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")
        ):
            try:
                raise ValueError(
                    f"User-specified context_length ({args.context_length}) is greater than the derived context_length "
                    f"({facts.max_position_embeddings}). This may lead to incorrect model outputs or CUDA errors. "
                    "To allow overriding context_length, please set the env variable "
                    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
                )
            except ValueError:
                raise self.main_failed() from None
        self.context_length = context_len

        if args.attention_backend is None:
            first_cc = float(self.state["gpus"][0]["compute_cap"])
            backend = "fa3" if first_cc >= 9.0 else "flashinfer"
            self.log(f"Attention backend not explicitly specified. Use {backend} backend by default.")
        self.at(0.1)
        self.log("Init torch distributed begin.", rank=0)
        try:
            self.build_runners(facts)
        except EngineCrash:
            raise
        except Exception:
            raise self.scheduler_failed() from None
        self.log("Init torch distributed ends. mem usage=0.48 GB", rank=0)

        self.at(0.15)
        for runner in self.runners:
            self.log(f"Load weight begin. avail mem={runner.memory.avail_before_load:.2f} GB", rank=runner.tp_rank)
        self.register_memory(self.runners[0].memory.used_mib)
        try:
            for runner in self.runners:
                runner.load_model()
        except Exception:
            raise self.scheduler_failed() from None
        load_begin = time.monotonic()
        self.at(0.2)
        self.out.write(
            f"Loading safetensors checkpoint shards:   0% Completed | 0/{facts.shard_count} [00:00<?, ?it/s]"
        )
        self.at(0.45)
        elapsed = time.monotonic() - load_begin
        rate = facts.shard_count / max(elapsed, 0.01)
        self.out.write(
            f"Loading safetensors checkpoint shards: 100% Completed | {facts.shard_count}/{facts.shard_count} "
            f"[00:{int(elapsed):02d}<00:00, {rate:5.2f}it/s]"
        )
        self.at(0.5)
        for runner in self.runners:
            m = runner.memory
            self.log(
                f"Load weight end. elapsed={time.monotonic() - load_begin:.2f} s, type={facts.architecture}, "
                f"dtype=torch.bfloat16, avail mem={m.avail_after_load:.2f} GB, mem usage={m.weights:.2f} GB.",
                rank=runner.tp_rank,
            )
        self.register_memory(self.runners[0].memory.used_mib)

        self.at(0.55)
        try:
            for runner in self.runners:
                runner.init_memory_pool()
        except Exception:
            raise self.scheduler_failed() from None
        m0 = self.runners[0].memory
        kv_dtype = "torch.float8_e4m3fn" if args.kv_cache_dtype.startswith("fp8") else "torch.bfloat16"
        self.log(f"Using KV cache dtype: {kv_dtype}", rank=0)
        if facts.hybrid_linear:
            self.log(
                "Hybrid GDN model detected, disable radix cache"
                if args.disable_radix_cache
                else f"Mamba scheduler strategy: {args.mamba_scheduler_strategy}",
                rank=0,
            )
            ssm = m0.mamba_size * 0.96
            self.log(
                f"Mamba Cache is allocated. max_mamba_cache_size: {m0.max_mamba_cache_size}, "
                f"conv_state size: {m0.mamba_size - ssm:.2f}GB, ssm_state size: {ssm:.2f}GB ",
                rank=0,
            )
        self.log(
            f"KV Cache is allocated. #tokens: {m0.kv_tokens}, K size: {m0.kv_size / 2:.2f} GB, "
            f"V size: {m0.kv_size / 2:.2f} GB",
            rank=0,
        )
        self.log(f"Memory pool end. avail mem={m0.avail_after_pool:.2f} GB", rank=0)

        self.at(0.6)
        if not args.disable_cuda_graph:
            self.log(
                "Capture cuda graph begin. This can take up to several minutes. "
                f"avail mem={m0.avail_after_pool:.2f} GB",
                rank=0,
            )
            sizes = [
                bs
                for bs in (1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 96, 128, 160, 192, 224, 256, 512)
                if bs <= self.cuda_graph_max_bs
            ]
            self.log(f"Capture cuda graph bs {sizes}", rank=0)
            graph_begin = time.monotonic()
            for runner in self.runners:
                runner.init_cuda_graphs(self.cuda_graph_max_bs)
            self.at(0.75)
            self.log(
                f"Capture cuda graph end. Time elapsed: {time.monotonic() - graph_begin:.2f} s. "
                f"mem usage={m0.graph:.2f} GB. avail mem={m0.avail_after_graph:.2f} GB.",
                rank=0,
            )
        self.register_memory(m0.used_mib)

        max_running = args.max_running_requests or min(4096, max(2048, m0.kv_tokens // max(context_len, 1) * 512))
        self.at(0.8)
        self.log(
            f"max_total_num_tokens={m0.kv_tokens}, chunked_prefill_size={self.chunked_prefill_size}, "
            f"max_prefill_tokens={args.max_prefill_tokens}, max_running_requests={max_running}, "
            f"context_len={context_len}, available_gpu_mem={m0.avail_after_graph:.2f} GB"
        )

        self.at(0.82)
        if args.node_rank > 0:
            # SGLang's engine: "In multi-node cases, non-zero rank nodes do not need to run tokenizer or
            # detokenizer, so they can just wait here" (python/sglang/srt/entrypoints/engine.py): no HTTP server.
            self.ready.set()
            return
        try:
            self.bind_port()
        except OSError as exc:
            address = (args.host, args.port)
            self.log(f"INFO:     Started server process [{self.pid}]")
            self.log("INFO:     Waiting for application startup.")
            self.log("INFO:     Application startup complete.")
            self.log(
                f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address {address!r}: "
                f"{(exc.strerror or '').lower()}"
            )
            self.log("INFO:     Waiting for application shutdown.")
            self.log("INFO:     Application shutdown complete.")
            raise EngineCrash(1) from None
        finally:
            if holder is not None:
                holder.close()
        self.log(f"INFO:     Started server process [{self.pid}]")
        self.log("INFO:     Waiting for application startup.")
        self.log("INFO:     Application startup complete.")
        self.serve()
        self.log(f"INFO:     Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)")

        if not args.skip_server_warmup:
            self.at(0.9)
            self.request_self("GET", "/get_model_info")
            self.request_self(
                "POST",
                "/generate",
                {"text": "The capital city of France is", "sampling_params": {"temperature": 0, "max_new_tokens": 8}},
            )
        self.at(1.0)
        steps = args.speculative_num_steps or 0 if args.speculative_algorithm else 0
        self.start_load(self.runners[0].memory.kv_tokens, spec_tokens=steps, accept_length=self.accept_len)
        self.ready.set()
        self.log("The server is fired up and ready to roll!")

    def build_runners(self, facts: ModelFacts) -> None:
        args = self.args
        gpus = self.visible()
        per_node = args.tp_size // max(args.nnodes, 1)
        wanted = list(range(args.base_gpu_id, args.base_gpu_id + per_node))
        if wanted[-1] >= len(gpus):
            raise RuntimeError(
                "CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other "
                "API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
                "CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
            )
        self.placement = [gpus[i] for i in wanted]
        first = self.gpu(self.placement[0])
        fraction, chunked, graph_bs = default_memory_settings(
            first["memory_total_mib"], args.tp_size, args.speculative_algorithm
        )
        self.mem_fraction_static = args.mem_fraction_static or fraction
        self.chunked_prefill_size = args.chunked_prefill_size or chunked
        self.cuda_graph_max_bs = args.cuda_graph_max_bs or graph_bs
        if args.speculative_algorithm == "DFLASH":
            # a block drafter accepts several tokens a step: mean acceptance length 6.07 at block 16 for
            # Qwen3-8B-DFlash-b16 on SGLang (vllm-project/vllm-ascend PR #7162's table), about a third of the block
            block = args.speculative_num_draft_tokens or 16
            self.accept_len = min(float(block), 1.0 + (block - 1) / 3)
        elif args.speculative_algorithm:
            self.accept_len = min(1.0 + 0.62 * args.speculative_num_steps, args.speculative_num_draft_tokens or 2)
        self.runners = [
            ModelRunner(args, facts, __version__, rank, self.gpu(index), self.free_gib(index), self.mem_fraction_static)
            for rank, index in enumerate(self.placement, start=args.node_rank * per_node)
        ]

    # ----------------------------------------------------------------------------------------- serving
    def metrics_text(self) -> str | None:
        if not self.args.enable_metrics or self.load is None:
            return None  # SGLang serves /metrics only with --enable-metrics
        return sglang_text(self.load.snapshot(), self.served_model_name,
                           speculative=bool(self.args.speculative_algorithm))

    def periodic_line(self, tick: int) -> list[str]:
        args, tokens = self.args, self.runners[0].memory.kv_tokens
        if args.node_rank > 0:
            return []  # batches are logged by TP0, on node 0
        used = 150 + 40 * tick
        lines = []
        if tick == 1:
            lines.append(
                f"Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: {158 / tokens:.2f}, "
                "#running-req: 0, #queue-req: 0"
            )
        accept = ""
        if args.speculative_algorithm:
            length = max(1.0, self.accept_len + random.uniform(-0.25, 0.25))
            rate = (length - 1) / max(args.speculative_num_steps or 1, 1)
            accept = f"accept len: {length:.2f}, accept rate: {rate:.2f}, "
        throughput = 41.0 * (self.accept_len * 0.85 if args.speculative_algorithm else 1.0) + random.uniform(-2, 2)
        lines.append(
            f"Decode batch, #running-req: 1, #token: {used}, token usage: {used / tokens:.2f}, {accept}"
            f"cuda graph: {not args.disable_cuda_graph}, gen throughput (token/s): {throughput:.2f}, #queue-req: 0"
        )
        return lines

    def log_periodic(self, line: str) -> None:
        self.log(line, rank=0)


def launch_server(server_args: ServerArgs) -> int:
    return SGLangEngine(server_args).main()
