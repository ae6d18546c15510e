"""Rules for the linker and compilers of a JIT kernel build, whatever the engine: the system linker and compiler
drivers, nvcc / ptxas / NVRTC, ninja, Triton, DeepGEMM, LLVM and MLIR, and the other accelerators' toolchains (HIP's
runtime compiler, Ascend's CANN and Triton-Ascend compilers). Moved unchanged out of bot/diagnose/rules.py
(JIT_TOOL_RULES) and bot/diagnose/signals.py (the others), whose tables take them in at the same places, so the order
the rules are tried in is what it was.

Sources, each the tool's own text: the linker while Triton builds its launcher ("/usr/bin/ld: cannot find -lcuda",
"collect2: error: ld returned 1 exit status"): https://github.com/state-spaces/mamba/issues/123,
https://github.com/pytorch/pytorch/issues/103417; the others beside their rule.
Patterns are linear-time: no nested quantifiers, bounded gaps between alternatives.
"""

from __future__ import annotations

from bot.diagnose.types import Rule, r

#: A JIT build's missing tools and failed steps (Python headers, a C compiler, nvcc, ninja, ptxas, torch.compile), in
#: bot/diagnose/rules.py's table after the GPU rules (moved here from there unchanged).
JIT_TOOL_RULES: tuple[Rule, ...] = (
    Rule("python_headers", "jit_compile_failure", r(r"fatal error: Python\.h: No such file or directory"), 82, 0.9,
         "a JIT build needs the Python development headers (Python.h), which are not installed", kind="python_dev"),
    Rule("no_c_compiler", "jit_compile_failure",
         r(r"Failed to find (?:a )?C(?:\+\+)? compiler|command '(?:gcc|cc|c\+\+|g\+\+)' failed"
           r"|No such file or directory: '(?:gcc|cc|g\+\+|c\+\+)'"),
         80, 0.9, "a JIT build needs a C compiler, and none was found", kind="compiler"),
    Rule("no_nvcc", "jit_compile_failure",
         r(r"nvcc:? (?:command )?not found|No such file or directory: '[^']*nvcc'|CUDA_HOME (?:environment variable )?"
           r"is not set|cannot find CUDA_HOME|Could not find nvcc"),
         80, 0.9, "a JIT build needs the CUDA toolkit (nvcc / CUDA_HOME), which was not found", kind="nvcc"),
    Rule("ninja_failed", "jit_compile_failure",
         r(r"Ninja build failed|ninja: build stopped|Command '\['ninja'|Error building extension|"
           r"CalledProcessError: Command '\[[^\]]{0,400}ninja"),
         78, 0.85, "a JIT kernel build (ninja) failed", kind="ninja"),
    Rule("ptxas_failed", "jit_compile_failure",
         # (ptxas's own words when the target is newer than it: "Value 'sm_121a' is not defined for option 'gpu-name'")
         r(r"PTXASError|ptxas[^\n]{0,80}\berror\b|ptxas fatal"
           r"|Value 'sm_\d{2,3}\w?' is not defined for option 'gpu-name'"),
         70, 0.75,
         "a Triton kernel failed to compile for this GPU (ptxas)", kind="ptxas",
         unsure=("quantization_unsupported", "cuda_arch_or_driver")),
    Rule("torch_compile_failed", "jit_compile_failure",
         r(r"torch\._dynamo\.exc\.|torch\._inductor\.exc\.|InductorError|BackendCompilerFailed"
           r"|triton\.compiler\.errors\.CompilationError"),
         62, 0.75, "torch.compile / Triton compilation failed", kind="torch_compile"),
)

#: The toolchains of other accelerators (checked before the generic build rules below, as in signals.py before).
ACCELERATOR_BUILD_RULES: tuple[Rule, ...] = (
    # HIP's runtime compiler (hiprtc) could not find the GPU's ISA: its build log says "hip runtime failed to load."
    # and "Error: Please provide architecture for which code is to be generated." (ROCm clr
    # hipamd/src/hiprtc/hiprtcInternal.cpp, RTCProgram::findIsa; vllm-project/vllm#36167).
    Rule("hiprtc_no_isa", "jit_compile_failure",
         r(r"\bPlease provide architecture for which code is to be generated\b|\bISA cannot be found from hip\b"
           r"|^(?:Error: )?hip runtime failed to load\.?$"), 62, 0.7,
         "HIP's runtime compiler (hiprtc) could not tell which GPU to build a kernel for (it could not load the HIP "
         "runtime or find the GPU's ISA)", kind="hiprtc", unsure=("cuda_arch_or_driver",), any_level=True),
    # Triton-Ascend's compiler (bishengir-compile) refusing its target or failing.
    Rule("bishengir_failed", "jit_compile_failure",
         r(r"\bbishengir-compile: [^\n]{0,200}(?:error|Cannot find option|failed)"), 62, 0.65,
         "Triton-Ascend's kernel compiler (bishengir-compile) failed", kind="compiler_error",
         unsure=("cuda_arch_or_driver",), any_level=True),
    # Ascend's CANN compilers: an operator's kernel or a graph's fused kernels did not build ("Failure_to_Compile_Op
    # (E40021): Failed to compile Op [trans_Cast_2,]", vllm-project/vllm-omni#890; GE's "[GraphOpt][FusedGraph]
    # [RunCompile] Failed to compile graph with compiler Normal mode Op Compiler" ... "subgraph 0 optimize failed
    # [FUNC:OptimizeSubGraphWithMultiThreads]", Ascend/pytorch#61).
    Rule("ascend_compile_failed", "jit_compile_failure",
         r(r"\bFailure_to_Compile_Op\b|\bFailed to compile Op\b|\bFailed to compile graph with compiler\b"
           r"|\bsubgraph \d{1,4} optimize failed\b"), 64, 0.7,
         "Ascend's operator / graph compiler (CANN) failed to build a kernel", kind="ascend_compile",
         unsure=("cuda_arch_or_driver",), any_level=True),
    # A compiler's own command line relayed as an ERROR: the failed step of a JIT build, logged by the engine's
    # worker before the build's exception (flashinfer's ninja output, vllm-project/vllm#29590). At INFO or bare it
    # is ordinary build output.
    Rule("compiler_command_at_error", "jit_compile_failure",
         r(r"^(?:\S{0,200}/)?(?:nvcc|hipcc|g\+\+|c\+\+|gcc|clang\+\+)(?:-\d{1,3})? (?:-{1,2}[\w-]{1,60}[= ]?\S{0,300} ){2}"),
         58, 0.65, "a JIT kernel build failed: the engine logged the compiler's command as an error",
         kind="compiler_error", level="ERROR"),
)

BUILD_RULES: tuple[Rule, ...] = (
    Rule("linker_missing_library", "jit_compile_failure",
         r(r"\bld(?:\.\w{1,10})?: cannot find -l([\w.+-]{1,80})|\bld(?:\.\w{1,10})?: cannot find ([^\s:]{1,200})"),
         82, 0.9, "a JIT kernel build failed to link: the linker cannot find lib{0} ({1})", kind="linker"),
    Rule("linker_failed", "jit_compile_failure",
         r(r"collect2: error: ld returned \d+ exit status|\bundefined reference to [`'](\S{1,200})'"), 78, 0.85,
         "a JIT kernel build failed at the link step", kind="linker"),
    # nvcc's own error format "x.cu(123): error: identifier ... is undefined", a compiler driver's "gcc: error: ...",
    # ninja's "FAILED: <object>" step, a CUDA tool missing from the toolkit, a header that is not installed.
    Rule("cuda_compiler_error", "jit_compile_failure",
         r(r"\.(?:cu|cuh|cpp|cc|c|h|hpp)\(\d{1,7}\): (?:catastrophic )?error\b|^(?:gcc|g\+\+|cc1plus|clang\+{0,2}|nvcc)"
           r": (?:fatal )?error:|^FAILED: \S{1,300}\.(?:o|so|obj)\b"
           r"|\b(?:cicc|ptxas|nvlink|fatbinary): (?:command )?not "
           r"found|fatal error: ([\w./-]{1,120}\.(?:h|hpp|cuh)): No such file or directory"
           # the CUDA toolkit's front end and device linker, the GNU assembler and make, in their own words
           # ("cicc: error: ...", "nvlink error   : Undefined reference to ...", "x.s: Assembler messages:",
           # "make: *** [Makefile:42: kernels.o] Error 1")
           r"|^(?:cicc|nvlink|fatbinary)(?: error\s{0,4}:|: (?:fatal )?error\b)|^\S{1,300}\.s: Assembler messages:$"
           r"|^make(?:\[\d{1,3}\])?: \*\*\* \[[^\]\n]{1,300}\] Error \d{1,4}"),
         77, 0.85, "a JIT kernel build failed in the compiler {0}", kind="compiler_error"),
    Rule("no_cuda_toolkit", "jit_compile_failure",
         r(r"Could not find CUDA (?:toolkit|installation)|CUDA toolkit (?:not found|is not installed)"
           r"|CUDA_HOME=?\S{0,200} does not exist|No CUDA runtime is found"), 78, 0.8,
         "a JIT build needs the CUDA toolkit, which was not found", kind="nvcc"),
    # A JIT build that could not start or finish for another reason, in the kernel library's own words
    # ("FlashInfer failed to JIT-compile: ninja (build tool) not found", unslothai/unsloth#4541).
    Rule("jit_could_not_build", "jit_compile_failure",
         r(r"failed to JIT[- ]compile(?:: ([^\n]{1,160}))?|\b(ninja|nvcc|gcc|g\+\+) \(build tool\) not found"), 74, 0.8,
         "a kernel's JIT build could not run: {0}{1}", kind="build"),
    # Triton could not fit a kernel into this GPU (shared memory / registers): the kernel's configuration, not OOM.
    Rule("triton_out_of_resources", "jit_compile_failure",
         r(r"OutOfResources: out of resource: (\w{1,40})"), 72, 0.7,
         "a Triton kernel does not fit this GPU's {0} (its configuration targets a larger GPU)", kind="ptxas",
         unsure=("cuda_arch_or_driver",)),
    Rule("deepgemm_jit", "jit_compile_failure",
         r(r"DeepGEMM[^\n]{0,80}(?:compil|JIT)[^\n]{0,80}(?:fail|error)|deep_gemm[^\n]{0,40}jit[^\n]{0,80}error"),
         70, 0.75, "DeepGEMM's JIT kernel build failed", kind="build"),
    # A kernel build that failed in its build tool or its compiler's backend: "Failed to load JIT HiCache kernel:
    # ninja exited with status 2" (sglang jit_kernel), LLVM's "stack frame size (164332) exceeds limit (131056)"
    # (Triton for ROCm, vllm-project/vllm#9319), a compiler's crash dump ("Program arguments: .../bishengir-compile",
    # LLVM's PrettyStackTrace, sgl-project/sglang#11546).
    Rule("kernel_build_tool_failed", "jit_compile_failure",
         r(r"\bninja exited with status [1-9]|\bFailed to (?:load|build|compile) JIT\b[^\n]{0,80}kernel"
           # a build step named as such: DeepGEMM's "Failed to compile <file>.cu with NVCC", cutlass's DSL "failed to
           # compile kernel", TVM-FFI's "Compilation failed"
           r"|\bfailed to compile\b[^\n]{0,200}?(?:\.cuh?\b|\.cpp\b|\bkernels?\b|\bnvcc\b|\bwith \w{2,10}$)"
           r"|\b(?:TVM\w{0,10}|Runtime)Error: Compilation failed\b"
           # AITER's JIT (ROCm): "failed build jit [module_moe_ck2stages]" (aiter/jit/core.py)
           r"|\bfailed build jit\b"
           # DeepGEMM's JIT runtime when its compiler returned non-zero ("Assertion error
           # (csrc/jit/kernel_runtime.hpp:45): exit_code == 0")
           r"|\bjit\w{0,20}/[\w/.]{0,80}\.hpp:\d{1,6}\): exit_code == 0\b"
           r"|\bstack frame size \(\d{1,12}\) exceeds limit\b"
           # LLVM's report_fatal_error, MLIR's pass manager (Triton lowers through both), NVRTC's runtime compiler
           r"|^LLVM ERROR: |failures have been detected while processing an MLIR pass pipeline|PassManager::run failed"
           r"|\bnvrtc: error\b|\bNVRTC_ERROR_\w{3,40}"
           r"|^\s{0,8}\d{0,3}\.?\s{0,4}Program arguments: \S{0,200}(?:compile|clang|llc|\bopt|ptxas|nvcc|mlir)\S{0,40}"),
         70, 0.75, "a JIT kernel build failed in its build tool or compiler", kind="compiler_error", any_level=True),
    Rule("compiler_failed", "jit_compile_failure",
         # (Triton on Windows builds its launcher with the tcc it ships: triton/runtime/tcc/tcc.exe)
         r(r"CalledProcessError: Command '\['[^']{0,200}\b(?:gcc|g\+\+|cc|c\+\+|clang\+?\+?|nvcc|tcc|cl)(?:\.exe)?'"
           # gcc / nvcc's last words after a fatal error in an included header (a missing cuda_fp8.h)
           r"|^compilation terminated\.$"
           r"|\b\d{1,5} errors? detected in the compilation of"
           r"|\.(?:c|cc|cpp|cu|cuh|h|hpp):\d+:(?:\d+:)? (?:fatal )?error: (.{1,200})|\bnvcc fatal\s*:"
           r"|error: command '[^']{0,200}(?:gcc|nvcc|g\+\+)' failed"),
         79, 0.85, "a JIT kernel build failed in the compiler", kind="compiler_error"),
)
