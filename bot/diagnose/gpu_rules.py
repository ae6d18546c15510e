"""The diagnoser's rules for the GPU itself: its architecture and compute capability, its driver, and the
quantization kernels a GPU generation runs (bot/diagnose/rules.py explains how rules are chosen; these are one
section of its table, kept apart so each module stays small).
"""

from __future__ import annotations

from bot.diagnose.types import GPU_GENERATIONS, Rule, r as _r

#: How vLLM's kernel dispatch says no kernel of its wheel covers the GPU, in its releases' wordings: "No compiled
#: cutlass_scaled_mm for a compute capability less than CUDA device capability: 121" and "No compiled
#: cutlass_scaled_mm for CUDA device capability: 89" (both in vllm-0.11.0's _C.abi3.so), "No compiled
#: get_cutlass_moe_mm_data: no cutlass_scaled_mm kernel for CUDA device capability: 120" (vLLM 0.10.2, the NVFP4 MoE
#: path; vllm-project/vllm#24921).
_FOR_CAPABILITY = (r"(?:: no \w{1,60} kernel)? for (?:a compute capability less than )?CUDA device capability:"
                   r" ?(\d{2,3})")

GPU_RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ GPU architecture / driver / quantization
    Rule("quant_dtype", "quantization_unsupported",
         _r(r"(?<![\w.])([\w.]++) is not supported for quantization method (\w+)"), 82, 0.9,
         "{0} is not supported by the {1} quantization kernels of this engine version", kind="dtype"),
    Rule("quant_gpu", "quantization_unsupported",
         _r(r"quantization method (\w+) is not supported for the current GPU"), 82, 0.9,
         "this GPU is too old for the {0} quantization kernels", kind="gpu"),
    Rule("quant_unknown", "quantization_unsupported", _r(r"Unknown quantization method:? ?'?([\w-]*)"), 78, 0.85,
         "this engine version does not know the quantization method '{0}'", kind="unknown"),
    Rule("quant_not_on_gpu", "quantization_unsupported",
         _r(r"\b(fp8|fp4|nvfp4|mxfp4|awq|gptq|marlin|w8a8|int8|int4)\b[^\n]{0,120}\bnot supported on\b"), 70, 0.8,
         "{0} quantization is not supported on this GPU", kind="gpu"),
    Rule("driver_too_old", "cuda_arch_or_driver",
         _r(r"NVIDIA driver on your system is too old|CUDA driver version is insufficient|cudaErrorInsufficientDriver"
            r"|forward compatibility was attempted on non supported HW|driver version \S+ is older than"),
         85, 0.9, "the NVIDIA driver is too old for the CUDA version the engine was built with", kind="driver"),
    Rule("no_kernel_image", "cuda_arch_or_driver",
         # (a message cut at the console's width still names it: "RMSNorm failed with error code no kernel image
         # is available")
         _r(r"no kernel image is available(?: for execution on the device)?|device kernel image is invalid"
                           r"|CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorNoKernelImageForDevice"),
         80, 0.9, "the engine's compiled kernels do not include this GPU's architecture", kind="arch",
         unsure=("jit_compile_failure",)),
    # The same absence in other words: CUDA's cudaErrorInvalidDeviceFunction ("invalid device function": the device
    # function is not compiled for this architecture), and vLLM's quantized GEMM dispatch when its wheel carries no
    # kernel for the GPU's capability (csrc/quantization/.../scaled_mm_entry.cu: "No compiled cutlass_scaled_mm for a
    # compute capability less than CUDA device capability: 121", a wheel built without sm_121; vllm-project/vllm#9419
    # for 75).
    # Ascend's CANN / vllm-ascend refusing the NPU model: the build's kernels are for another SoC
    # ("Can not support soc_version: 104", "the socversion Ascend910B1 of bin package does not match the current
    # device socverison Ascend310P3"; vllm-project/vllm-ascend#6796, #2725).
    # ROCm's math libraries without kernels for the GPU: rocBLAS cannot read its Tensile kernel library for the
    # device's gfx target ("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek
    # for GPU arch : gfx1150", vllm-project/vllm#28460, a Radeon 890M the image's rocBLAS was not built for; the
    # message is rocBLAS's own, library/src/tensile_host.cpp), the same for hipBLASLt.
    Rule("rocm_library_lacks_gpu", "cuda_arch_or_driver",
         _r(r"\b(rocBLAS|hipBLASLt) error: Cannot read [^\n]{0,300}?(?:for GPU arch ?: ?(gfx\w{2,8}))?$"), 79, 0.85,
         "ROCm's {0} has no kernels for this GPU ({1}): the installed ROCm / image was not built for its gfx target",
         kind="rocm_arch", any_level=True),
    Rule("npu_soc_unsupported", "cuda_arch_or_driver",
         _r(r"\bcan ?not support soc_?version\b|\bsoc_?vers?ion \S{1,40} of bin package does not match"
            r"|\bunsupported soc_?version\b"), 76, 0.8,
         "the engine's kernels are not built for this NPU (its SoC version)", kind="arch"),
    Rule("kernel_not_compiled_for_gpu", "cuda_arch_or_driver",
         # (ROCm's HIP says it the same way: "HIP error: invalid device function", hipErrorNoBinaryForGpu)
         _r(r"(?:CUDA|HIP) error: invalid device function|cudaErrorInvalidDeviceFunction"
            r"|hipErrorInvalidDeviceFunction|hipErrorNoBinaryForGpu"
            r"|No compiled (\w{1,60})" + _FOR_CAPABILITY), 78, 0.8,
         "the engine's compiled kernels ({0}) do not cover this GPU's architecture ({1})", kind="arch",
         unsure=("quantization_unsupported",)),
    # ... where the kernel missing is the quantized GEMM itself (cutlass_scaled_mm: W8A8 / FP8 checkpoints, vLLM
    # csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu): the checkpoint's quantization has no kernel on this GPU,
    # as both readings of the Jetson Orin report (dusty-nv/jetson-containers#1118, capability 87) and
    # vllm-project/vllm#9419 (75) file it.
    Rule("quantized_gemm_not_for_gpu", "quantization_unsupported",
         _r(r"No compiled ((?:get_)?(?:cutlass_)?(?:scaled_mm|moe_mm)\w{0,40})" + _FOR_CAPABILITY), 79, 0.75,
         "this GPU (capability {1}) has no {0} kernel in the installed build: the checkpoint's quantization "
         "(W8A8, FP8, FP4 GEMMs) cannot run on it", kind="gemm_arch", unsure=("cuda_arch_or_driver",)),
    Rule("sm_not_compatible", "cuda_arch_or_driver",
         _r(r"with CUDA capability (sm_\d+a?) is not compatible with the current PyTorch installation"), 78, 0.85,
         "the installed PyTorch was not built for this GPU ({0})", kind="arch", any_level=True),
    Rule("bf16_unsupported", "cuda_arch_or_driver",
         _r(r"Bfloat16 is only supported on GPUs with compute capability of at least ([\d.]+)"), 82, 0.9,
         "this GPU has no bfloat16 support (needs compute capability {0})", kind="bf16"),
    Rule("min_capability", "cuda_arch_or_driver",
         _r(r"Minimum capability:? ?(\d+)[^\n]{0,40}Current capability:? ?(\d+)"),
         76, 0.85, "a feature needs compute capability {0}, the GPU has {1}", kind="capability"),
    # the same refusal without numbers (flash-attn's "FlashAttention only supports Ampere GPUs or newer.")
    # Triton's own minimum ("Found Tesla P40 which is too old to be supported by the triton GPU compiler ... Triton
    # only supports devices of CUDA Capability >= 7.0", torch/_inductor/scheduler.py / triton).
    Rule("gpu_too_old", "cuda_arch_or_driver",
         _r(r"\btoo old to be supported by\b|\bonly supports devices of CUDA Capability >= ?([\d.]{1,5})"), 78, 0.85,
         "this GPU is older than what the compiler or kernel needs (compute capability {0})", kind="too_old"),
    # A feature only FlashAttention 3 / 4 has (vLLM's FlashAttention backend: "Sinks are only supported in
    # FlashAttention 3", gpt-oss's attention sinks; FA3 runs on Hopper only, FA4 on Blackwell).
    Rule("feature_needs_fa3", "cuda_arch_or_driver",
         _r(r"\b(?:is|are) only supported (?:in|with|by|on) (?:FlashAttention|FA) ?-?v?([34])\b"), 74, 0.7,
         "a feature of this model needs FlashAttention {0}, which this GPU generation cannot run", kind="fa_version",
         unsure=("bad_argument",)),
    # Hopper-only code failing on another GPU: a TMA descriptor (sm_90+ hardware) the driver refuses with
    # CUDA_ERROR_NOT_SUPPORTED (801; CUTLASS/CuTe's "Failed to initialize the TMA descriptor 801",
    # Dao-AILab/flash-attention#1706 on an Orin, sm_87), or a CUDA error raised in FlashAttention 3's sources (its
    # hopper/ folder: "CUDA error (.../flash-attention/hopper/flash_fwd_launch_template.h:188): invalid argument",
    # vllm-project/vllm#23231 on an RTX 5090). Other TMA failures (a bad stride, code 1) are a kernel bug: not these.
    Rule("hopper_only_kernel", "cuda_arch_or_driver",
         _r(r"Failed to initialize the TMA descriptor 801\b"
            r"|CUDA error \([^)\n]{0,200}/hopper/[\w/]{0,80}\.(?:h|hpp|cuh?|cpp):\d{1,6}\): (?:invalid argument"
            r"|no kernel image|invalid device function|operation not supported)"), 73, 0.7,
         "a kernel written for Hopper GPUs (FlashAttention 3 / TMA) ran on a GPU of another generation",
         kind="hopper_only",
         unsure=("other",), any_level=True),
    Rule("min_capability_named", "cuda_arch_or_driver",
         _r(r"only supports? (" + GPU_GENERATIONS + r") GPUs or newer|requires? (?:a )?GPU with compute capability"),
         76, 0.85, "a feature needs a newer GPU generation ({0}) than this one", kind="capability"),
    # A kernel built for one architecture only ("This kernel only supports sm120." on a GB10, sm_121: a prebuilt
    # kernel's own check, eugr/spark-vllm-docker#143), not a minimum.
    Rule("sm_only", "cuda_arch_or_driver",
         _r(r"\bonly supports? (?:sm|SM)_?(\d{2,3})[af]?\b(?!\s{0,3}(?:and|or|\+|/|,))"), 73, 0.75,
         "this kernel is built for sm_{0} only, and this GPU is another architecture", kind="capability"),
    # The engine's own minimum ("SGLang only supports sm 75 and above", "requires sm_80 or newer").
    Rule("sm_minimum", "cuda_arch_or_driver",
         _r(r"\b(?:only supports?|requires?|needs?) (?:an? )?(?:GPUs? )?(?:with )?(?:sm|SM) ?_?(\d{2,3})\w? ?(?:and\s{1,3}(?:above|"
            r"newer|later|up)|or\s{1,3}(?:above|newer|later|higher)|\+)"), 74, 0.8,
         "the engine needs compute capability sm_{0} or newer; this GPU is older", kind="capability",
         any_level=True),
    # A kernel library's C++ check of the GPU it runs on: DeepGEMM's "Assertion error (csrc/apis/attention.hpp:219):
    # Unsupported architecture" (the architecture there is the GPU's: no model is named), and a check that names
    # the SM versions it has ("Only SM 10.x and 11.x are supported", sgl-kernel's Blackwell-only kernels).
    Rule("kernel_gpu_arch_unsupported", "cuda_arch_or_driver",
         _r(r"\.(?:hpp|cuh?|cpp|cc|h):\d{1,6}\)?:? Unsupported (?:GPU |CUDA |SM |device )?arch(?:itecture)?\b\.?\s*$"
            r"|\bUnsupported (?:GPU|CUDA|SM|device) arch(?:itecture)?\b"
            # (a build script's lookup of the GPU's target: "Unknown GPU architecture: gfx1101. Supported
            # architectures: [...]", ROCm builds of vLLM, vllm-project/legacy-rocm-build#5680)
            r"|\bUnknown (?:GPU|CUDA|device|AMD GPU) arch(?:itecture)?:"
            # CuTe DSL's check of the target (cutlass.cute.nvgpu: "expects arch to be one of ['sm_120a'], but got
            # Arch.sm_121a")
            r"|\bexpects arch(?:itecture)? to be one of\b|\bbut got Arch\.sm_\d{2,3}\w?\b"
            r"|\bOnly (?:SM|sm_?|compute capability) ?\d{1,3}(?:\.\w)?(?:(?:,| and| or) (?:SM ?)?\d{1,3}(?:\.\w)?){0,4}"
            r" (?:is|are) supported\b"),
         74, 0.75, "a kernel of this launch does not support this GPU's architecture", kind="kernel_arch"),
    # A backend (a choice a flag makes: --attention-backend, --prefill-attention-backend) refused on this GPU
    # generation, in the words of the check that lists what it allows ("Only {'trtllm_mha', 'triton', 'fa4'} backends
    # are supported on Blackwell GPUs for hybrid GDN models. Got attention_backend=flashinfer.", sglang
    # server_args.py). Filed like the generation checks below (the GPU's), with the flag as the alternative: the
    # collections label such refusals both ways.
    Rule("backend_not_for_this_gpu", "cuda_arch_or_driver",
         _r(r"(?:\bbackends?\b[^\n]{0,80}?\b(?:is |are )?(?:only |not )(?:yet )?"
            r"|\bOnly\b[^\n]{1,80}?\bbackends? (?:is|are) )"
            r"supported (?:on|for|with) (?:NVIDIA )?(" + GPU_GENERATIONS + r"|SM ?\d{2,3}\w?|sm_?\d{2,3}\w?)"),
         69, 0.6, "the backend this launch chose does not run on this GPU generation ({0}): choose another",
         kind="generation", unsure=("bad_argument",)),
    # A feature for one GPU generation ("TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x)",
    # sglang server_args.py; "FlashMLA is only supported on Hopper devices.", vllm attention/ops/flashmla.py).
    Rule("gpu_generation_only", "cuda_arch_or_driver",
         _r(r"\b(?:only supported|only available|only works|supported only) on (?:NVIDIA )?(" + GPU_GENERATIONS
            + r")\b"),
         70, 0.6, "a feature set for this launch runs only on {0} GPUs", kind="generation",
         unsure=("bad_argument",)),
)
