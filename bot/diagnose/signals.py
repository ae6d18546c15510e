"""Rules for what any process prints whatever the engine: the OS (a killed process, a taken port, in every locale),
the CUDA driver, the Transformers fallback model class both engines
use. Wordings only one engine prints (vLLM's V1 engine refusing a feature, an architecture that "failed to be
inspected") are that engine's crash rules (planners/engines/<name>/crash_rules.py).

Sources, each the engine's or tool's own text:
- the shell's "Killed" and strerror(EADDRINUSE) in every locale: glibc's message catalogues (bot/diagnose/locale.py);
- ZMQ's "Address already in use (addr='tcp://127.0.0.1:5570')": https://github.com/vllm-project/vllm/issues/7196,
  https://github.com/sgl-project/sglang/issues/9396; torch's TCPStore "EADDRINUSE": vllm-project/vllm#11617;
- the linker and compilers of a JIT build: bot/diagnose/build_rules.py;
- vLLM's V1 oracle, vllm/engine/arg_utils.py ``_raise_or_warning``: "VLLM_USE_V1=1 is not supported with {feature}"
  (raised) and "{feature} is not supported by the V1 Engine. Falling back to V0." (a warning):
  https://github.com/vllm-project/vllm/pull/13726, https://github.com/vllm-project/vllm-ascend/issues/2169;
- vLLM's registry: "Model architectures ['Qwen2ForCausalLM'] failed to be inspected. Please check the logs for more
  details." https://github.com/vllm-project/vllm/issues/17341;
- vLLM's Transformers fallback: "The Transformers implementation of StableLMAlphaForCausalLM is not compatible with
  vLLM", "... has no vLLM implementation": https://github.com/vllm-project/vllm/issues/15046.
Patterns are linear-time: no nested quantifiers, bounded gaps (``[^\\n]{0,N}``) between alternatives.
"""

from __future__ import annotations

import re

from bot.diagnose.build_rules import ACCELERATOR_BUILD_RULES, BUILD_RULES
from bot.diagnose.locale import ADDRESS_IN_USE, KILLED, NO_MEMORY, NO_SPACE, PERMISSION_DENIED, SEGFAULT
from bot.diagnose.engine_keywords import ENGINE_KEYWORDS
from bot.diagnose.types import Rule, r
from bot.diagnose.optional import OPTIONAL_IMPORT

#: The NVIDIA driver's own user-space libraries (libcuda, libnvidia-ml, ...) refused by the loader: no usable driver
#: on this host or in this container, whichever package's import tripped over it (bot/diagnose/unknown.py reads it
#: inside a compiled extension's import warning too).
DRIVER_LIBRARY_MISSING = r(r"(libcuda\.so[\w.]{0,20}|libnvidia-[\w-]{1,40}\.so[\w.]{0,20})(?:: "
                           r"cannot open shared object file"
                           # a loader that says so in its own words ("Could not load libcuda.so.1. The GPU driver
                           # library is required for VMM-backed tensors.", vllm 0.34.0 utils/vmm_driver.py)
                           r"|\. The (?:GPU|CUDA|NVIDIA) driver library is required\b)")

#: A port message that goes on to pick another port (or retries) is a notice, not the crash.
_PORT_RETRY = r(r"\b(?:trying|retrying|will (?:try|use)|another port|next port|instead|fall(?:ing)? back|skipp)")
#: ... and a bind that failed because the address is not this host's (EADDRNOTAVAIL, errno 99: a wrong master or
#: host IP) is not a taken port, though torch words both "failed to bind" / "failed to listen".
_NOT_THIS_HOSTS_ADDRESS = r"Cannot assign requested address|EADDRNOTAVAIL|errno:? ?99\b|\[Errno 99\]"

SIGNAL_RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ the OS: a taken port, any port, any locale
    # The localised words are literal and compiled case-sensitively (fast literal scan); the rest ignores case.
    # Also at WARNING: torch's c10d logs the failed bind as "[W socket.cpp:...] ... failed to bind to [::]:29500
    # (errno: 98 - Address already in use)" before its error line; a message that goes on to another port is not one.
    Rule("address_in_use", "port_in_use",
         re.compile(ADDRESS_IN_USE), 80, 0.9, "a port the engine binds is already taken by another process",
         any_level=True, exclude=_PORT_RETRY),
    Rule("address_in_use_words", "port_in_use",
         re.compile(r"(?i:address already in use|EADDRINUSE|\[Errno 98\]|errno:? ?98\b"
                    r"|Only one usage of each socket address|\bAddress in use\b"
                    r"|\bport:? ?\d{2,5} (?:is )?(?:already )?(?:in use|used by another|taken|occupied)"
                    r"|\bports? (?:at |= ?)?\d{2,5} (?:is|are) not (?:available|free)"
                    r"|port\w{0,20} at \d{2,5} is not available"
                    r"|\bis used by (?:a|another) process already|Can(?:no|')t bind (?:to )?(?:port|address)"
                    # vLLM's launcher names the holder: "port 8000 is used by process psutil.Process(pid=...)"
                    r"|\bport \d{2,5} is used by process\b"
                    # Docker publishing the port (moby's port allocator: "Bind for 0.0.0.0:8000 failed: port is
                    # already allocated"); Windows' WSAEADDRINUSE by its number
                    r"|\bport is already allocated\b|\bWSAEADDRINUSE\b|\[WinError 10048\]"
                    # torch's c10d store when its port is held ("The server socket has failed to listen on any local
                    # network address"), a bind that failed on a port or an address:port
                    r"|\bserver socket has failed to (?:listen|bind)\b"
                    # asyncio's create_server, as uvicorn logs it, cut before its reason
                    r"|\berror while attempting to bind on address \('[\d.:a-f]{1,45}', \d{2,5}\)(?!: \[?errno 99)"
                    r"|\b(?:failed|unable) to bind (?:to )?(?:port \d{2,5}|[\w.:\[\]-]{1,60}:\d{2,5}\b))"),
         80, 0.9, "a port the engine binds is already taken by another process", any_level=True,
         exclude=r(_PORT_RETRY.pattern + "|" + _NOT_THIS_HOSTS_ADDRESS)),
    # The address to bind is not one of this host's (EADDRNOTAVAIL, errno 99): a --host, master or node IP of another
    # machine, or a host IP inside a container without host networking. ZMQ: "zmq.error.ZMQError: Cannot assign
    # requested address (addr='tcp://10.27.91.102:13345')" (vllm-project/vllm#31884); uvicorn/asyncio: "[Errno 99]
    # error while attempting to bind on address ('10.0.0.5', 8000): cannot assign requested address". (A connect()
    # that ran out of local ports says the same words: not a bind.)
    Rule("address_not_this_hosts", "bad_argument",
         r(r"Cannot assign requested address|\bEADDRNOTAVAIL\b|\[Errno 99\]"), 81, 0.75,
         "the engine binds an address that is not one of this host's (EADDRNOTAVAIL): the host / master / node IP it "
         "was given belongs to another machine or is not visible inside the container", kind="bind_address",
         any_level=True, exclude=r(r"\bconnect(?:ing|ion)?\b"),
         unsure=("other",)),  # (an engine's own listener picking the wrong interface, e.g. NIXL's handshake on Ray)
    # ------------------------------------------------------------------ the OS: killed (SIGKILL), any locale
    Rule("shell_killed", "host_oom_killed",
         re.compile(r"^" + KILLED + r"\s{0,20}(?:\(core dumped\))?$|(?<!\d)\d{1,12}:\s{1,20}\d{1,12}\s{1,40}" + KILLED
                    + r"(?:\s|$)|^\[\d{1,6}\][+-]?\s{1,20}" + KILLED + r"(?:\s|$)|^zsh: killed\s"),
         25, 0.55, "the engine was killed (SIGKILL) by the system: most often the host OOM killer", kind="bare_kill"),
    Rule("container_oom", "host_oom_killed",
         r(r"\bOOMKilled\b|code=killed, status=9/KILL|exited with code 137\b|Exit code:\s{0,20}137\b"), 35, 0.65,
         "the container or service was killed with SIGKILL (exit 137): its memory limit or the host OOM killer",
         any_level=True),
    # The OS refused memory (ENOMEM): host RAM ran out without the OOM killer firing (an mmap of a shard, a fork).
    Rule("host_enomem", "host_oom_killed", re.compile(NO_MEMORY + r"|\[Errno 12\]|ENOMEM"), 68, 0.75,
         "the OS refused to allocate host memory (ENOMEM): host RAM or its overcommit limit ran out", kind="enomem",
         # (not the InfiniBand verbs' ENOMEM: their pinned memory is capped by the locked-memory limit, an RDMA
         # transport's failure, comm_rules.py rdma_transport)
         exclude=r(r"CUDA|cuda|GPU|device memory|\bibv_\w{2,40}|NCCL WARN")),
    # A compiled module the loader refused, in a paste cut after "undefined symbol"
    # ("_C.cpython-310-x86_64-linux-gnu.so: undefined symbol"), and sgl-kernel's own loader giving up on every build
    # it ships (sgl_kernel/load_utils.py: "[sgl_kernel] CRITICAL: Could not load any common_ops library!").
    Rule("extension_refused", "missing_dependency",
         r(r"\.so(?:\.\d{1,3})*: undefined symbol\b|\[sgl_kernel\] CRITICAL: Could not load any common_ops library"),
         62, 0.65, "a compiled package does not load (built against another torch / CUDA / Python)", kind="binary"),
    # CUDA initialised in a parent, then used in a forked child (torch/cuda/__init__.py _lazy_init).
    Rule("cuda_in_forked_child", "other",
         r(r"Cannot re-initialize CUDA in forked subprocess"), 60, 0.75,
         "CUDA was initialised before the engine forked its workers (the 'spawn' start method is needed)", kind="fork"),
    # NCCL's socket layer and its proxy thread (nccl src/misc/socket.cc, src/proxy.cc), whatever prefix is kept.
    Rule("nccl_socket", "nccl_error",
         r(r"\bsocketPollConnect: Connect to \S{1,80} returned \d{1,3}\((?:No route to host|Network is unreachable)"
           r"|\bProxy Call to rank \d{1,5} failed\b"), 56, 0.7,
         "NCCL could not connect its ranks (network between the GPUs or nodes)", kind="nccl", any_level=True),
) + ACCELERATOR_BUILD_RULES + (
    # Python's own MemoryError and C++'s std::bad_alloc: an allocation of host memory failed (a huge tokenizer or
    # checkpoint read into RAM). Modest: a nonsense size asked for by a bug reads the same.
    Rule("host_alloc_failed", "host_oom_killed",
         r(r"^(?:builtins\.)?MemoryError\b|\bwhat\(\):\s{0,4}std::bad_alloc\b|^MemoryError: std::bad_alloc"), 54, 0.55,
         "an allocation of host memory failed (MemoryError / std::bad_alloc): host RAM ran out, or a size was wrong",
         kind="enomem", unsure=("other",), exclude=r(r"CUDA|cuda|GPU|device memory|NPU")),
    # Ray's memory monitor kills a worker before the kernel does (ray.exceptions.OutOfMemoryError).
    Rule("ray_memory_monitor", "host_oom_killed",
         r(r"Ray killed this worker|exceeds the memory usage threshold|Task was killed due to the node running low on"
           r" memory|killed due to memory pressure"), 72, 0.8,
         "Ray's memory monitor killed a worker: host RAM reached its threshold",
         any_level=True),
    # A native crash as the shell reports it, in the host's locale (strsignal(SIGSEGV)).
    Rule("segfault_locale", "other", re.compile(SEGFAULT), 35, 0.55,
         "the engine crashed in native code (segmentation fault)", kind="segfault", any_level=True),
    # A native abort: a C++ exception nobody caught ("terminate called after throwing an instance of
    # 'c10::Error'", its "what():" line carries the message a specific rule may know), or the shell's "Aborted".
    Rule("native_abort", "other",
         r(r"terminate called after throwing an instance of '([\w:]{1,120})'|^Aborted(?: \(core dumped\))?$"
           r"|Fatal Python error: Aborted"), 34, 0.5,
         "the engine aborted in native code (an uncaught C++ exception {0})", kind="segfault", any_level=True),
    # The disk filled up (a download, the JIT / compile cache, the log); /dev/shm is NCCL's (nccl_shm).
    Rule("disk_full", "other", re.compile(NO_SPACE + r"|\[Errno 28\]|ENOSPC|StorageFull"), 82, 0.8,
         "a disk ran full (ENOSPC) while the engine wrote to it (a download, a cache, the log)", kind="disk_full",
         exclude=r(r"/dev/shm|shared memory")),
    # The model's own files cannot be read by the engine's user (a mount owned by another user, a root-only copy).
    Rule("model_permission", "model_files_missing_or_corrupt",
         re.compile(r"(?:" + PERMISSION_DENIED + r"|\[Errno 13\])[^\n]{0,40}'([^'\n]{0,300}"
                    r"(?:\.safetensors|config\.json"
                    r"|\.bin|tokenizer\w{0,20}\.\w{1,10}|/models?/[^'\n]{0,200}))'"), 74, 0.8,
         "the engine may not read the model's files ({0}): a permission problem on the folder", kind="permission"),
) + BUILD_RULES + (
    # A binary built against a newer C/C++ runtime than the host has ("version `GLIBCXX_3.4.30' not found"), or a
    # Windows DLL that does not load.
    Rule("runtime_library_too_old", "missing_dependency",
         r(r"version [`'](GLIBC(?:XX)?_[\d.]{1,12})' not found|\bDLL load failed\b"), 74, 0.8,
         "a compiled package needs a newer system library ({0}) than the host has", kind="binary",
         # NCCL trying an optional network plugin and falling back to its internal one (nccl src/plugin/net.cc:
         # "NET/Plugin: Plugin load returned ... : when loading libnccl-net.so"): a notice, whatever the reason
         exclude=r(r"NET/Plugin|when loading libnccl")),
    # PyTorch's dispatcher: the op is registered, but not for this device ("Could not run '_C::rms_norm' with
    # arguments from the 'CUDA' backend ... is only available for these backends: [CPU, ...]"): the installed build of
    # the compiled package (vLLM's _C, torchvision) was made for another backend or GPU, e.g. a CPU-only wheel
    # (vllm-project/vllm#12441, #13075) or kernels not built for this GPU (vllm-project/vllm#17095, machete on a
    # non-Hopper card).
    Rule("op_not_built_for_backend", "missing_dependency",
         r(r"Could not run '([\w.]{1,60}::\w{1,120})' with arguments from the '(\w{1,30})' backend"), 73, 0.8,
         "the installed build of a compiled package has no {1} kernel for {0}: it was built for another backend or "
         "GPU (a CPU-only or mismatched wheel)", kind="binary", unsure=("cuda_arch_or_driver",)),
    # CANN's operator kernel package missing: an aclnn op cannot read its kernels' binary_info_config.json ("EZ1001:
    # ... Get path and read binary_info_config.json failed, please check if the opp_kernel package is installed!",
    # vllm-project/vllm-ascend#573): the CANN install lacks a package (Ascend's opp kernels).
    Rule("cann_kernel_package_missing", "missing_dependency",
         r(r"please check if the opp_kernel package is installed|read binary_info_config\.json failed"), 74, 0.8,
         "the CANN install lacks its operator kernel package (opp_kernel): an Ascend op found no kernel binaries",
         kind="cann_package", any_level=True),
    # torch.distributed's other backends and its rendezvous (gloo, c10d TCPStore) failing between ranks or nodes.
    Rule("distributed_transport", "nccl_error",
         r(r"\[?Gloo\]?[^\n]{0,120}(?:error|fail|refused|timed? ?out|reset)"
           r"|RendezvousTimeoutError|RendezvousClosedError"
           r"|c10d[^\n]{0,80}(?:Connection (?:reset|refused|closed)|Broken pipe)|ProcessGroupNCCL[^\n]{0,120}"
           r"(?:error|fail|timed? ?out|abort)"), 56, 0.7,
         "multi-GPU / multi-node communication (torch.distributed) failed", kind="nccl", any_level=True,
         # (the NCCL watchdog reporting a CUDA kernel's crash: "watchdog thread terminated with exception: CUDA
         # error: an illegal memory access was encountered" is the kernel's, sgl-project/sglang#22987)
         exclude=r(r"illegal memory access|device-side assert|misaligned address|illegal instruction")),
    # ------------------------------------------------------------------ the CUDA driver and devices
    Rule("no_gpu", "cuda_arch_or_driver",
         r(r"no CUDA-capable device is detected|cudaErrorNoDevice|Found no NVIDIA driver on your system"
           r"|CUDA driver initialization failed|NVIDIA-SMI has failed because it couldn't communicate"
           r"|system has unsupported display driver / cuda driver combination|CUDA unknown error - this may be due"
           r"|the provided PTX was compiled with an unsupported toolchain"
           # the driver older than the toolkit that wrote the kernels' PTX (cudaErrorUnsupportedPtxVersion)
           r"|CUDA error: unsupported PTX version|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|cudaErrorUnsupportedPtxVersion"
           r"|CUDA-capable device\(s\) is/are busy or unavailable"
           # torch's own (torch/cuda/__init__.py _lazy_init, c10/cuda/CUDAFunctions.cpp) and NVML's
           r"|\bNo CUDA GPUs are available\b|Unexpected error from cudaGetDeviceCount\(\)"
           r"|Failed to initialize NVML: Driver/library version mismatch|\bNVML_SUCCESS == [^\n]{0,80}INTERNAL ASSERT"
           r" FAILED|Torch not compiled with CUDA enabled"
           # the NVIDIA container toolkit refusing the container ("nvidia-container-cli: requirement error: unsatisfied
           # condition: cuda>=12.4, please update your driver", "initialization error: nvml error: driver not loaded")
           r"|nvidia-container-cli: (?:requirement|initialization) error"
           # cudaErrorSystemNotReady (802): "system not yet initialized" -- a driver daemon (the NVSwitch systems'
           # fabric manager) is not running; the CUDA runtime's own text, whatever prints it (cuda_runtime_api.h)
           r"|\bsystem not yet initiali[sz]ed\b|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY"),
         80, 0.85, "the engine cannot use the GPU: the driver is missing, too old or not visible here",
         kind="driver"),
    # cudaErrorInvalidDevice: the process was asked for a GPU it cannot see (CUDA_VISIBLE_DEVICES, more TP ranks than
    # visible GPUs, a GPU id past the visible ones): a launch setting, not the driver (THUDM/slime#1326, a gpu_id of
    # 6 under CUDA_VISIBLE_DEVICES=4,5,6,7), so its step is the GPU count's.
    Rule("invalid_device_ordinal", "bad_argument", r(r"CUDA(?: driver)? error: invalid device ordinal|cudaErrorInvalidDevice"
                                              r"|Cuda (?:error|failure)\b[^\n]{0,300}'invalid device ordinal'"
                                              # Ascend's runtime on ASCEND_RT_VISIBLE_DEVICES naming an NPU it lacks
                                              r"|\bset ASCEND_RT_VISIBLE_DEVICES:\S{1,60} error\b"),
         74, 0.75, "the engine asked for a GPU this process cannot see (CUDA_VISIBLE_DEVICES, or more ranks than GPUs)",
         kind="gpu_count", unsure=("cuda_arch_or_driver",)),
    # Ascend's runtime (CANN) that cannot start on this device: torch_npu's first ACL calls fail ("SetPrecisionMode:
    # ... NPU function error: at_npu::native::AclSetCompileopt(...), error code is 500001", "init runtime platform
    # info failed, SocVersion = Ascend910B2"): the CANN install, its driver or the chip, like a CUDA driver problem.
    Rule("npu_runtime_init_failed", "cuda_arch_or_driver",
         r(r"\binit runtime platform info failed\b|\bSetPrecisionMode:[^\n]{0,300}NPU function error"
           r"|\baclrtGetDeviceCount\w{0,20}[^\n]{0,120}(?:error|fail)"), 66, 0.65,
         "the Ascend runtime (CANN) could not start on this NPU: the CANN toolkit, its driver or the chip do not "
         "match what torch_npu / the engine build needs", kind="npu_runtime"),
    # A package whose installed version lacks what the engine calls ("module 'aiter' has no attribute 'dtypes'",
    # "module 'torch' has no attribute 'float8_e8m0fnu'"): a dependency at another version than the engine pins.
    # (transformers has its own rules; the engines' own modules are the engine's bug or a mismatched plugin.)
    Rule("package_lacks_attribute", "missing_dependency",
         r(r"^AttributeError: module '(?!transformers\b|vllm\b|sglang\b)([a-z_][\w]{0,40})(?:\.[\w.]{1,60})?' has no "
           r"attribute '(\w{1,80})'"
           # ... or an object of its compiled extension: Python names a class it defines bare ("'Foo' object"), an
           # extension type by its module path ("'mooncake.store.MooncakeDistributedStore' object has no attribute
           # 'is_batch_exist'", sgl-project/sglang#6836: a Mooncake without the API SGLang calls)
           r"|^AttributeError: '(?!transformers\b|vllm\b|sglang\b)([a-z_]\w{0,40})\.[\w.]{1,80}' object has no "
           r"attribute '(\w{1,80})'"), 56, 0.6,
         "the installed {0}{2} has no {1}{3}: its version is not the one this engine release expects", kind="module",
         unsure=("other",)),
    # libcuda / libnvidia-* are the driver's own user-space libraries: not loadable means no usable driver here.
    Rule("driver_library_missing", "cuda_arch_or_driver", DRIVER_LIBRARY_MISSING, 76, 0.8,
         "the NVIDIA driver's library {0} cannot be loaded: no driver (or not mounted into the container)",
         kind="driver"),
    # Triton's fp8 types need sm_89+ ("type fp8e4nv not supported in this architecture", triton/language/semantic.py;
    # "fp8e4nv data type is not supported on CUDA arch < 89", triton/language/core.py). The taxonomy files "FP8 on
    # sm86" under cuda_arch_or_driver: the GPU's architecture lacks the type, whatever the checkpoint.
    Rule("triton_fp8_arch", "cuda_arch_or_driver",
         r(r"type (fp8\w{1,10}) not supported in this architecture|(fp8e4nv|fp8e5|fp8e4b15) data type is not "
           r"supported on CUDA arch < ?\d{2,3}"), 80, 0.8,
         "this GPU's architecture has no {0}{1}: FP8 needs compute capability 8.9+", kind="capability",
         unsure=("quantization_unsupported",), any_level=True),
    Rule("quant_not_on_this_gpu", "quantization_unsupported",
         r(r"\b(fp8|fp4|nvfp4|mxfp4|awq|gptq|marlin|w8a8|w4a8|int8|int4|modelopt|compressed[-_]tensors|bitsandbytes)\b"
           r"[^\n]{0,120}\b(?:not supported|unsupported|requires?)\b[^\n]{0,40}\b(?:this|the current|your|current)"
           r" (?:GPU|device|hardware|platform|architecture)"), 76, 0.8,
         "{0} quantization is not supported on this GPU", kind="gpu"),
    Rule("quant_scheme_gpu", "quantization_unsupported",
         r(r"Quantization scheme is not supported for|not supported for[' ,]{0,6}the current GPU[^\n]{0,60}Min"
           r"(?:imum)? capability"), 82, 0.85, "this GPU is too old for the checkpoint's quantization scheme",
         kind="gpu"),
    # The rejected architecture is a drafter's (an EAGLE / Medusa / MTP head checkpoint), not the target model's.
    Rule("draft_architecture_not_supported", "speculative_config_invalid",
         r(r"Model architectures? \[?'?(\w{0,40}(?:Eagle|Medusa|MTP|Speculator|Draft|NextN)\w{0,40})'?\]?[^\n]{0,40}?"
           r" (?:are|is) not supported"), 81, 0.85,
         "the draft model's architecture {0} is not supported by this engine version's speculative decoding"),
    Rule("unsupported_architectures_list", "unsupported_architecture",
         r(r"\bUnsupported architectures?:? \[?'?([\w.]{1,120})"), 80, 0.85,
         "this engine version does not support the architecture {0}"),
    # The OS: out of file descriptors (EMFILE), e.g. a Rust router's panic "Os { code: 24, ... Too many open files }".
    Rule("too_many_open_files", "other", r(r"Too many open files|\[Errno 24\]|\bEMFILE\b|Os \{ code: 24\b"), 60, 0.7,
         "the process ran out of file descriptors (EMFILE, errno 24): its open-files limit is too low", kind="fd_limit",
         any_level=True,
         # vLLM's start-up warning that names the error it may lead to (vllm/utils set_ulimit: "Found ulimit of 1024
         # and failed to automatically increase ... This can cause fd limit errors like `OSError: [Errno 24] ...`")
         exclude=r(r"\b(?:can|may|might|could) (?:cause|lead to)\b|\bConsider increasing\b")),
    # Remote artefacts fetched at start other than the model (a tokenizer vocabulary, a Harmony encoding), as a Rust
    # client (reqwest) words it: "error sending request for url (https://...)" (sgl-project/sglang#18074).
    Rule("remote_fetch_url", "hub_access", r(r"error sending request for url \(https?://"), 71, 0.75,
         "the engine could not download a file it needs at start (no Internet access?)", kind="network",
         any_level=True),
    # A TLS connection to a remote host that was reset or refused (urllib3's "ProtocolError: ('Connection aborted.',
    # ConnectionResetError(104, 'Connection reset by peer'))" out of ssl.py's do_handshake, allenai/olmocr#159;
    # Python's "[SSL: CERTIFICATE_VERIFY_FAILED]", a proxy intercepting TLS): at start the engine's only TLS peer is
    # the model hub. Not a local address (SGLang's warm-up request to its own server is plain HTTP).
    Rule("tls_connection_failed", "hub_access",
         r(r"ProtocolError: \('Connection aborted\.', ConnectionResetError\(104\b|\[SSL: [A-Z_]{3,60}\]"
           r"|\bSSLEOFError\b|\bSSLZeroReturnError\b"), 60, 0.55,
         "a TLS connection to a remote host (the model hub, at start) was reset or refused: no direct Internet "
         "access, or a proxy in the way", kind="network", unsure=("other",), any_level=True,
         exclude=r(r"localhost|127\.0\.0\.1|0\.0\.0\.0")),
    Rule("remote_fetch_failed", "hub_access",
         r(r"failed to download or load vocab file|Failed to load Harmony encoding"), 70, 0.75,
         "the engine could not download a file it needs at start (no Internet access?)",
         kind="network", any_level=True),
    # A class or module transformers lacks: the installed transformers predates the model ("cannot import name
    # 'Qwen3VLForConditionalGeneration' from 'transformers'", "No module named 'transformers.models.qwen3_vl'").
    # Not a helper function (snake_case: "cannot import name 'is_valid_list_of_images' from
    # 'transformers.models.mllama.image_processing_mllama'"): helpers move and go in newer releases, so the version is
    # off either way, a package problem (the generic import rule; sgl-project/sglang#3626, allenai/olmocr#97).
    Rule("transformers_lacks_class", "transformers_too_old",
         r(r"cannot import name '((?-i:[A-Z])\w{1,80})' from 'transformers(?:\.[\w.]{1,80})?'|No module named "
           r"'(transformers\.models\.\w{1,80})'"), 74, 0.85,
         "the installed transformers has no {0}{1}: it predates this model", exclude=OPTIONAL_IMPORT),
    # ------------------------------------------------------------------ engine checks of the model and its files
    Rule("context_over_model_limit", "bad_argument",
         r(r"User-specified max_model_len \((\d{1,9})\) is greater than the derived\b"
           r"|context_length[^\n]{0,60}is (?:greater|longer) than the derived context_length"), 82, 0.9,
         "the requested context length ({0}) is longer than the model's own maximum", kind="context_over_model"),
    # A bare KeyError on a model-type-like key (family name with a version digit: 'qwen2', 'gemma3', 'qwen3_moe'):
    # transformers' CONFIG_MAPPING lookup of a model type it does not know (QwenLM/Qwen3#434).
    Rule("model_type_keyerror", "transformers_too_old",
         r(r"^KeyError: '([a-z]{2,20}\d[a-z0-9]{0,10}(?:_[a-z0-9]{1,20}){0,3})'$"), 52, 0.55,
         "the installed transformers has no config class for model type '{0}' (a bare KeyError on it)",
         unsure=("other",)),
    # The checkpoint ships its own code and the engine was not allowed to run it (transformers: "contains custom code
    # which must be executed ... Please pass the argument `trust_remote_code=True`"; vLLM's tokenizer loader: "consider
    # setting `trust_remote_code=True` ... or using the `--trust-remote-code` flag",
    # vllm/transformers_utils/tokenizer.py).
    Rule("needs_trust_remote_code", "bad_argument",
         r(r"consider setting .?trust_remote_code=True|Please pass the argument .?trust_remote_code=True|requires you "
           r"to execute the (?:tokenizer|configuration|modeling) file|contains custom code which must be executed"),
         78, 0.85, "the checkpoint ships its own code and the engine runs without --trust-remote-code",
         kind="trust_remote_code", any_level=True),
    # transformers lacks the tokenizer / module / Auto class: it predates the model.
    Rule("transformers_lacks_tokenizer", "transformers_too_old",
         r(r"Tokenizer class (\w{1,80}) does not exist or is not currently imported"
           r"|module 'transformers(?:\.[\w.]{1,80})?' has no attribute '(\w{1,80})'"), 76, 0.8,
         "the installed transformers has no {0}{1}: it predates this model"),
    # The tokenizers library (Rust, serde) cannot parse a tokenizer.json written by a newer release: "data did not match
    # any variant of untagged enum ModelWrapper at line N column 3" (fixed by upgrading transformers/tokenizers, e.g.
    # mrwu-mac/ControlMLLM#9, unslothai/unsloth#1059; a truncated file reads the same, hence the alternative).
    # transformers' lazy module loader wraps whatever import failed beneath it (transformers/utils/import_utils.py
    # _LazyModule._get_module: "Failed to import {module} because of the following error (look up to see its
    # traceback):\n{e}"); the wrapped error follows on the next line ("cannot import name 'X' from 'huggingface_hub'":
    # a package of the wrong version). Below the rules that read that next line (No module named, transformers lacks).
    Rule("lazy_import_failed", "missing_dependency",
         r(r"Failed to import ([\w.]{1,120}) because of the following error \(look up to see its traceback\)"), 60, 0.7,
         "transformers could not import {0}; the line under it names the package missing or of the wrong version",
         kind="import"),
    Rule("tokenizer_json_too_new", "transformers_too_old",
         r(r"data did not match any variant of untagged enum (?:ModelWrapper|Py\w{1,40}Wrapper)\b"), 70, 0.75,
         "the installed tokenizers library cannot read this model's tokenizer.json (written by a newer release)",
         kind="tokenizer_format", unsure=("model_files_missing_or_corrupt",)),
    # transformers before 4.43 validated rope_scaling as {type, factor} only (LlamaConfig._rope_scaling_validation):
    # Llama 3.1's {"rope_type": "llama3", ...} fails there with this message.
    Rule("rope_scaling_old_schema", "transformers_too_old",
         r(r"rope_scaling.? must be a dictionary with two fields, .?type.? and .?factor"), 72, 0.8,
         "the installed transformers predates this model's rope_scaling format (Llama 3.1's rope_type 'llama3' needs "
         "transformers 4.43 or later)", kind="rope_schema"),
    Rule("transformers_auto_class", "transformers_too_old",
         r(r"Unrecognized configuration class [^\n]{0,200}for this kind of AutoModel"), 66, 0.7,
         "the installed transformers has no model class for this configuration"),
    Rule("not_a_registered_model", "unsupported_architecture",
         r(r"is not a registered model in the Transformers library|Cannot find model module\b"), 76, 0.8,
         "neither the engine nor transformers implements this architecture", kind="fallback"),
    Rule("required_packages_missing", "missing_dependency",
         r(r"requires the following packages that were not found in your environment: ([\w.,\s-]{1,200})"
           r"|requires the (\S{1,80}) library but it was not found in your environment"), 74, 0.85,
         "a package the model's code needs is not installed ({0}{1})", kind="module"),
    Rule("tokenizer_or_config_unloadable", "model_files_missing_or_corrupt",
         r(r"Can't load (?:tokenizer|the configuration|the model)(?: of| for){1,2} '([^'\n]{1,200})'|Error no file named "
           r"(?:pytorch_model\.bin|model\.safetensors|tf_model\.h5)"), 70, 0.75,
         "the model's files could not be loaded from {0}: a file is missing or the path is wrong", kind="path"),
    Rule("engine_args_unknown_keyword", "bad_argument",
         r(r"(?:Engine|Server|Async\w{0,20})?Args\.__init__\(\) got an unexpected keyword argument "
           r"'([\w-]{1,80})'"
           # Python before 3.10 names no class ("__init__() got an unexpected keyword argument"): the keyword
           # itself must then be one of the engines' own arguments (LLM(limit_mm_per_prompt=...) on a release
           # without it, hiyouga/LlamaFactory#6654), not a model's or a library's parameter.
           r"|\b__init__\(\) got an unexpected keyword argument '(" + ENGINE_KEYWORDS + r")'"), 62, 0.7,
         "the engine's arguments have no '{0}{1}' in this version", kind="unknown_keyword"),
    Rule("quantized_shape_misaligned", "tp_not_divisible",
         r(r"not aligned with the quantized weight shape|caused by too large tensor parallel size"), 82, 0.9,
         "at this TP a quantized weight cannot be split evenly (its group size does not divide the slice)",
         kind="block"),
    # "Invalid repository ID or local directory" for an id of the Hub's org/name form (not a path): the config probe
    # could not query the Hub (vllm-project/vllm#13510 and the '[V1] Misleading Error Messages' thread).
    Rule("repo_id_not_reachable", "hub_access",
         r(r"Invalid repository ID or local directory specified: '([\w.-]{1,100}/[\w.-]{1,100})'"), 81, 0.7,
         "the engine could not query the Hub for {0} (offline, a proxy, or a gated/private repo)", kind="network"),
    Rule("no_config_format", "model_files_missing_or_corrupt",
         r(r"Could not detect config format|no config file found|Ensure your model has either config\.json"
           r"|No supported config format found in"), 81, 0.85,
         "the model folder has no config.json (nor params.json): the path or the volume mount is wrong", kind="path"),
    # A ninja step logged as an error while a JIT kernel builds (vLLM workers log the build's output at ERROR).
    Rule("ninja_step_error", "jit_compile_failure", r(r"^\[\d{1,5}/\d{1,5}\] [^\n]{0,300}\b(?:nvcc|c\+\+|g\+\+|gcc)\b"),
         60, 0.7, "a JIT kernel build (ninja) failed", kind="ninja"),
    # ------------------------------------------------------------------ a newer runner refuses a feature / model
    # An HTTP proxy answered the server's own warm-up request (absolute URI in the request line: a proxy hop).
    Rule("warmup_through_proxy", "other",
         r(r"\"(?:GET|POST) https?://[^\"\s]{1,200}/(?:get_model_info|generate|health|v1/models)[^\"]{0,40}"
           r" HTTP/1\.\d\""
           r" (4\d\d|5\d\d)\b"), 40, 0.6,
         "the server's own warm-up request went through an HTTP proxy, which answered {0}", kind="proxy",
         any_level=True),
    # Either engine's generic Transformers fallback class (vLLM's and SGLang's TransformersForCausalLM) failing on an
    # attribute the architecture lacks: vllm/model_executor/models/transformers.py, sglang/srt/models/transformers.py.
    Rule("fallback_attribute_error", "unsupported_architecture",
         r(r"^AttributeError: '(Transformers\w{0,60})' object has no attribute"), 76, 0.8,
         "the engine has no native implementation of this architecture ({0}) and its generic Transformers fallback "
         "cannot run it", kind="fallback"),
)
