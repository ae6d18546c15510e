"""Advice for the GPU and the host: driver or architecture, quantization kernels the GPU cannot run, multi-GPU
communication (NCCL, P2P, /dev/shm), host RAM (the OOM killer)."""

from __future__ import annotations

import re

from bot.diagnose.advice.arguments import ATTENTION_BACKEND_FLAG
from bot.diagnose.advice.plan_view import PlanView, exception_message, gib, gpu_words
from bot.diagnose.advice.weights import quantized_shape_steps
from bot.diagnose.signals import DRIVER_LIBRARY_MISSING
from bot.diagnose.types import Advice, Finding
from bot.models import Fix, PlanOverrides


def advise_cuda(f: Finding, s: PlanView) -> Advice:
    gpu = gpu_words(s)
    steps: list[str] = []
    fix: Fix | None = None
    if f.kind == "driver":
        steps.append(_driver_step(f.decisive.text if f.decisive else "", s))
    elif f.kind == "npu_runtime":
        steps.append("the Ascend runtime did not start on this NPU: check that the CANN toolkit matches the NPU "
                     "driver and firmware (`npu-smi info`) and the torch_npu / engine build, and that "
                     "ASCEND_RT_VISIBLE_DEVICES names NPUs this host has")
    elif f.kind == "too_old":
        steps.append(f"{gpu or 'this GPU'} is older than the compiler or kernel this launch uses supports (the "
                     f"message names the capability it needs): run on such a GPU, or avoid that path (an engine "
                     f"release or mode that does not compile kernels with it)")
    elif f.kind == "fa_version":
        steps.append(f"FlashAttention 2 needs compute capability 8.0 (FA3: 9.0) and {gpu or 'this GPU'} is older: "
                     f"pick an attention backend it runs (vLLM: VLLM_ATTENTION_BACKEND, or {ATTENTION_BACKEND_FLAG}; "
                     f"a Triton or FlexAttention backend), or run on a newer GPU")
    elif f.kind == "hopper_only":
        steps.append(f"FlashAttention 3 and TMA kernels run on Hopper (sm_90) only and {gpu or 'this GPU'} is another "
                     f"generation: pick another attention backend (SGLang: --attention-backend flashinfer or triton; "
                     f"vLLM: VLLM_FLASH_ATTN_VERSION=2, or VLLM_ATTENTION_BACKEND=FLASHINFER / TRITON_ATTN), or an "
                     f"engine build whose kernels are for this GPU")
    elif f.kind == "no_backend":
        steps.append(f"vLLM found no attention backend for this model on {gpu or 'this GPU'}; the reasons it lists "
                     f"per backend say what rules each out (the compute capability, sparse MLA, an FP8 KV cache): "
                     f"drop a setting named there (--kv-cache-dtype fp8, a forced backend), or run on a GPU generation "
                     f"a backend supports for this model, or a newer vLLM")
    elif f.kind == "kernel_arch":
        text = f.decisive.text if f.decisive else ""
        steps.append(f"a kernel library has no kernels for {gpu or 'this GPU'}'s architecture "
                     f"(\"{exception_message(text)}\"): use a release of the engine or its image built for this GPU, "
                     f"or a launch that avoids that kernel (another attention / MoE backend)"
                     + ("; DeepGEMM can be switched off (VLLM_USE_DEEP_GEMM=0 for vLLM, SGL_ENABLE_JIT_DEEPGEMM=0 "
                        "for SGLang)" if re.search(r"deep_?gemm", text, re.IGNORECASE) else ""))
    elif f.kind == "rocm_arch":
        steps.extend(_rocm_arch_steps(f))
    elif f.kind == "bf16":
        steps.append(f"{gpu or 'this GPU'} has no bfloat16: run in float16 (--dtype float16)")
        fix = Fix(summary="--dtype float16 (no bfloat16 on this GPU)",
                  overrides=PlanOverrides(extra_args=["--dtype", "float16"]))
    elif f.kind == "generation" and f.decisive is not None:
        chosen = [token for token in s.argv if token.startswith("--") and "backend" in token]
        steps.append(f"the engine's check says: \"{exception_message(f.decisive.text)}\"; {gpu or 'this GPU'} is "
                     f"not of that generation: choose a backend or kernel this GPU runs"
                     + (f" (the plan passes {', '.join(chosen)})" if chosen else
                        " (drop the flag that chose it and let the engine pick)")
                     + ", or run on such a GPU")
    elif f.kind == "capability":
        steps.append(f"{f.cause}: on {gpu or 'this GPU'} do not use this feature (e.g. FP8 needs compute "
                     f"capability 8.9+): a bf16/fp16 or AWQ/GPTQ checkpoint, or a newer GPU")
    else:
        steps.append(f"the installed engine/torch has no compiled kernels for {gpu or 'this GPU'}: install a build "
                     f"that includes this architecture (newer GPUs need a torch built for CUDA 12.8+)")
        steps.append("a kernel JIT-compiled elsewhere (a copied cache) can cause the same: clear the JIT caches "
                     "(~/.cache/flashinfer, ~/.triton) and relaunch")
    return steps, fix


def _rocm_arch_steps(f: Finding) -> list[str]:
    """ROCm's math libraries without kernels for the GPU's gfx target (the target named when rocBLAS said it)."""
    target = f.match.group(2) if f.match is not None and f.match.group(2) else "this GPU's gfx target"
    # (HSA_OVERRIDE_GFX_VERSION makes the ROCm runtime report another gfx target: AMD's documented workaround for
    # consumer Radeon parts missing from a release's build list, unsupported and at the user's risk)
    return [f"the ROCm libraries in this install / image have no kernels for {target}: use a ROCm release (and an "
            f"engine image built on it) whose supported-GPU list has it (`rocminfo | grep gfx` shows the target)",
            "for a consumer Radeon part a release does not list, HSA_OVERRIDE_GFX_VERSION set to the nearest supported "
            "target of the same generation (e.g. 11.0.0 for RDNA 3 parts) often runs: unsupported, so verify the "
            "output"]


#: What the driver's words say is wrong with it: (pattern, the step).
_DRIVER_CASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"system not yet initiali[sz]ed|SystemNotReady|SYSTEM_NOT_READY", re.IGNORECASE),
     "the driver says the system is not initialised (CUDA error 802): on NVSwitch machines (HGX/DGX) start the "
     "fabric manager (`systemctl start nvidia-fabricmanager`, the same version as the driver) and relaunch"),
    (re.compile(r"Driver/library version mismatch", re.IGNORECASE),
     "the loaded kernel module and the driver's libraries differ (the driver was upgraded without a reboot): reboot "
     "the host, or reload the nvidia kernel modules"),
    (re.compile(r"no CUDA-capable device|No CUDA GPUs are available|Found no NVIDIA driver|couldn't communicate"
                r"|driver not loaded|cudaErrorNoDevice|not compiled with CUDA", re.IGNORECASE),
     "the process sees no GPU: run the container with the GPUs (`--gpus all` / the nvidia runtime), check "
     "CUDA_VISIBLE_DEVICES, and that `nvidia-smi` works on the host (the driver loaded)"),
)


def _driver_step(text: str, s: PlanView) -> str:
    library = DRIVER_LIBRARY_MISSING.search(text)
    if library is not None:
        # Not an old driver: none is visible at all, so "upgrade it" would send the person the wrong way.
        return (f"the loader found no {library.group(1)}, the NVIDIA driver's own library: check that `nvidia-smi` "
                f"works here, run the container with the GPUs (`--gpus all` / the nvidia runtime mounts the driver's "
                f"libraries), and that the GPUs are NVIDIA ones (on AMD GPUs use the engine's ROCm build)")
    for pattern, step in _DRIVER_CASES:
        if pattern.search(text):
            return step
    driver = f"driver {s.facts.driver_version} (CUDA {s.facts.cuda_version})" \
        if s.facts and s.facts.driver_version else "the host's driver"
    return (f"{driver} is older than the CUDA the engine's torch needs: upgrade the NVIDIA driver, or install an "
            f"engine/torch build for the driver's CUDA version")


def advise_quantization(f: Finding, s: PlanView) -> Advice:
    gpu = gpu_words(s)
    if f.kind == "dtype":
        dtype = f.match.group(1) if f.match is not None else "this dtype"
        return ([f"{dtype} does not work with these quantization kernels: run in float16 (--dtype float16)"],
                Fix(summary="--dtype float16 (what the quantized kernels support)",
                    overrides=PlanOverrides(extra_args=["--dtype", "float16"])))
    if f.kind == "refused" and f.decisive is not None:
        message = exception_message(f.decisive.text)
        return ([f"the quantization code refused this checkpoint or GPU: \"{message}\"; use a checkpoint whose "
                 f"method, bits and group size this engine supports on {gpu or 'this GPU'} (the message names what "
                 f"it accepts), or an engine release that supports it"], None)
    if f.kind == "quant_shape":
        return quantized_shape_steps(f, s), None
    if f.kind == "layout" and f.match is not None:
        return ([f"the checkpoint's quantized layout does not fit this engine's model class ({f.match.group(1)}): "
                 f"the engine does not support this quantization for this model or for one of its layers (an MoE "
                 f"router gate, a shared expert, a vision tower); use a checkpoint quantized with a method the "
                 f"engine lists for this architecture, a release that added it, or the bf16 checkpoint"], None)
    if f.kind == "kv_dtype":
        given = any(token.split("=", 1)[0] == "--kv-cache-dtype" for token in s.argv)
        return (["the attention backend cannot keep the KV cache in this dtype (an FP8 KV cache is stored as uint8): "
                 "drop --kv-cache-dtype so the cache uses the model's dtype, or pick an attention backend that "
                 "supports FP8 KV caches" + (" (the plan passes --kv-cache-dtype)" if given else "")],
                Fix(summary="drop --kv-cache-dtype", overrides=PlanOverrides(remove_args=["--kv-cache-dtype"]))
                if given else None)
    if f.kind == "kernel_shape":
        return (["on one GPU a weight of this model is not a multiple of the quantized kernel's tile: run the "
                 "checkpoint with another of the engine's kernels for its method (the message names one, e.g. "
                 "--quantization gptq instead of the Marlin kernel), or use a checkpoint with another group size, or "
                 "the bf16 checkpoint"], None)
    if f.kind == "gemm_arch":
        return ([f"the installed engine build has no quantized GEMM for {gpu or 'this GPU'}'s capability: run the "
                 f"bf16/fp16 checkpoint, or a quantization whose kernels cover this GPU (GPTQ/AWQ through Marlin on "
                 f"compute capability 8.0+), or an engine build compiled for this architecture"], None)
    if f.kind == "gguf":
        return (["serve the model's safetensors checkpoint (or a non-GGUF quantization of it: AWQ, GPTQ, FP8) instead "
                 "of the GGUF file; a newer transformers may map this GGUF architecture (its GGUF loader's "
                 "supported list names them), and the engine must support the architecture itself"], None)
    if f.kind == "moe_backend":
        return ([f"none of this build's MoE kernels for the checkpoint's quantization runs on {gpu or 'this GPU'} "
                 f"with these settings: unset settings that narrow the choice (VLLM_BATCH_INVARIANT, a forced MoE "
                 f"backend, expert parallelism), or use a checkpoint in a format whose MoE kernels cover this GPU, or "
                 f"an engine release that added one"], None)
    if f.kind == "unknown":
        return ([f"{s.engine or 'the engine'} {s.plan.engine_version if s.plan and s.plan.engine_version else ''} "
                 f"does not know this quantization method: upgrade the engine or use a checkpoint in a format it "
                 f"supports".replace("  ", " ")], None)
    return ([f"{gpu or 'this GPU'} cannot run this quantization: use a checkpoint in another format (bf16/fp16, or "
             f"AWQ/GPTQ on older GPUs), or a GPU that supports it"], None)


def _p2p_broken(s: PlanView) -> bool:
    if not s.facts or not s.facts.p2p:
        return False
    gpus = set(s.plan.gpus) if s.plan else None
    for pair, state in s.facts.p2p.items():
        ends = {int(x) for x in re.findall(r"\d+", pair)}
        if (gpus is None or ends <= gpus) and state.lower() not in ("ok", "supported", "yes"):
            return True
    return False


def advise_nccl(f: Finding, s: PlanView) -> Advice:
    steps: list[str] = []
    p2p_fix = Fix(summary="NCCL_P2P_DISABLE=1 and --disable-custom-all-reduce (these GPUs have no P2P)",
                  overrides=PlanOverrides(env={"NCCL_P2P_DISABLE": "1"}, extra_args=["--disable-custom-all-reduce"]))
    if f.kind == "p2p" or _p2p_broken(s):
        steps.append("these GPUs cannot reach each other's memory (consumer cards / PCIe without P2P): disable P2P "
                     "and the custom all-reduce")
        return steps, p2p_fix
    if f.kind == "shm":
        steps.append("NCCL needs /dev/shm: in a container run with --ipc=host or a larger --shm-size (e.g. 16g); "
                     "check `df -h /dev/shm` on the host")
    elif f.kind == "duplicate_gpu":
        steps.append("two ranks were placed on one GPU: give each rank its own device (CUDA_VISIBLE_DEVICES, the "
                     "data-parallel ranks' device assignment, one process per GPU); NCCL cannot run two ranks on one")
    elif f.kind == "nccl_library":
        library = f.match.group(1) if f.match and f.match.groups() else "the library"
        steps.append(f"check {library} exists and loads (`ldd {library}`; an NCCL built for this CUDA and "
                     "platform): a VLLM_NCCL_SO_PATH / SGLANG_NCCL_SO_PATH that points elsewhere is the usual cause; "
                     "unset it to use the NCCL that comes with torch (nvidia-nccl-cu12)")
    elif f.kind == "hccl":
        steps.append("Ascend's HCCL could not connect the NPUs: check their network (`hccn_tool -i 0 -link -g`, the "
                     "NPU IPs), the interface HCCL uses (HCCL_SOCKET_IFNAME / HCCL_IF_IP) and, on several nodes, "
                     "that every node started within HCCL_CONNECT_TIMEOUT")
    elif f.kind == "accelerator_ccl":
        steps.append("the accelerator's own collective library failed between its devices (NCCL's settings do not "
                     "apply to it): rerun with its debug log (oneCCL: CCL_LOG_LEVEL=debug), check that every rank "
                     "sees all its devices and that /dev/shm is large enough in a container (--ipc=host); a broken "
                     "pipe there is most often a peer rank that died first")
    elif f.kind == "rdma":
        steps.append("the RDMA transport (NVSHMEM for DeepEP, or the KV transfer engine of PD disaggregation) could "
                     "not set up its InfiniBand resources: check `ibv_devices` / `ibstat` on every node, the "
                     "locked-memory limit (`ulimit -l unlimited`, --ulimit memlock=-1 for docker) and which RDMA "
                     "devices the transport is told to use")
    elif f.kind == "timeout":
        steps.append("a collective timed out: one rank stalled or died first and the others waited; that rank's own "
                     "error (an OOM, an exception, a kill) is the cause. Relaunch with NCCL_DEBUG=INFO and "
                     "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 to have it named; on several nodes check the network between "
                     "them (NCCL_SOCKET_IFNAME)")
    else:
        steps.append("rerun with NCCL_DEBUG=INFO to see the failing call; the usual causes: /dev/shm too small in a "
                     "container (--ipc=host), GPUs without P2P (NCCL_P2P_DISABLE=1), several network interfaces "
                     "(NCCL_SOCKET_IFNAME)")
    return steps, None


def advise_host_oom(f: Finding, s: PlanView) -> Advice:
    if f.rule == "ray_memory_monitor":
        # Ray's raylet, not the kernel, killed it: dmesg shows nothing; its threshold and the actors per node do.
        steps = ["Ray's memory monitor killed the worker when the node's RAM passed RAY_memory_usage_threshold "
                 "(0.95 by default): fewer engine actors or other tasks per node, more RAM, or a higher threshold; "
                 "`ray memory` / the dashboard shows who held it"]
    else:
        steps = ["check the host's kernel log: `dmesg -T | grep -i -E 'killed process|out of memory'`"]
    if s.facts and s.facts.ram_total_bytes:
        available = f", {gib(s.facts.ram_available_bytes)} available now" if s.facts.ram_available_bytes else ""
        steps.append(f"{s.facts.host} has {gib(s.facts.ram_total_bytes)} of RAM{available}")
    if s.plan and s.tp and s.tp > 1:
        steps.append(f"with TP {s.tp}, {s.tp} workers read the {gib(s.plan.weights_bytes)} checkpoint through RAM "
                     f"at once: free RAM, add swap, or stop other memory-heavy jobs before relaunching")
    else:
        steps.append("weights pass through RAM while loading: free RAM or add swap before relaunching")
    if f.kind == "engine_gone":
        steps.append("if the line came at the end of a script whose outputs were already printed (an offline "
                     "LLM(...) run), it is vLLM's engine monitor seeing the engine exit at shutdown: harmless")
    if f.kind == "bare_kill":
        steps.append("if dmesg shows no OOM kill, something else sent SIGKILL (a container memory limit, a "
                     "supervisor or timeout)")
    return steps, None
