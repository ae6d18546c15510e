"""The diagnoser's rules for multi-GPU and multi-node communication: NCCL, its P2P and shared-memory needs, the
collective timeouts, Ascend's HCCL, NVSHMEM and the RDMA registration of PD disaggregation (bot/diagnose/rules.py
explains how rules are chosen; these are one section of its table, kept apart so each module stays small).
"""

from __future__ import annotations

from bot.diagnose.types import Rule, r as _r

#: gloo's TCP transport failing (torch.distributed's CPU backend, which SGLang and vLLM use beside NCCL): its errors
#: carry their source file ("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer",
#: "[.../gloo/transport/tcp/unbound_buffer.cc:133] Timed out waiting 1800000ms for send operation to complete";
#: github.com/facebookincubator/gloo gloo/transport/tcp/pair.cc, unbound_buffer.cc).
GLOO_TRANSPORT = _r(r"gloo/transport/[\w/]{1,40}\.cc:\d{1,6}\] ?\w")  # (only its throws quote their file)

COMM_RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ multi-GPU communication
    Rule("p2p_unsupported", "nccl_error", _r(r"peer access is not supported between these two devices"), 60, 0.8,
         "the GPUs cannot access each other's memory (no P2P), and the custom all-reduce needs it", kind="p2p",
         exclude=_r(r"To silence this warning|Setup Custom allreduce failed|disable[_ -]custom[_ -]all[_ -]?reduce")),
    # vLLM's custom all-reduce exits on a failed CUDA call of its own (csrc/custom_all_reduce.cuh CUDACHECK: printf
    # "Failed: Cuda error %s:%d '%s'", older builds without "Cuda error"), most often the IPC buffers between GPUs
    # that cannot map each other's memory (ai-dynamo/dynamo#787: "Failed: /workspace/csrc/custom_all_reduce.cuh:368
    # 'invalid argument'", relayed at INFO by the wrapper). Its out-of-memory is the memory's (rules.py cuda_oom).
    # (The same failure right after a capture is labelled cuda_graph_oom by another collector, vllm-project/vllm
    # #56180: named as the alternative.)
    Rule("custom_allreduce_failed", "nccl_error",
         _r(r"\bFailed: (?:Cuda error )?\S{0,200}custom_all_reduce\.cuh:\d{1,6} '([^'\n]{1,120})'"), 64, 0.7,
         "vLLM's custom all-reduce (CUDA IPC buffers shared between the GPUs) failed: '{0}'", kind="p2p",
         # (a kernel's own crash surfacing at its check stays a kernel crash, test_diagnose_cuda_strings.py)
         any_level=True, unsure=("cuda_graph_oom",),
         exclude=_r(r"'out of memory'|illegal memory access|device-side assert|misaligned address|unspecified launch "
                    r"failure|illegal instruction")),
    Rule("nccl_shm", "nccl_error",
         _r(r"NCCL WARN Error while (?:creating|attaching to) shared memory segment|/dev/shm[^\n]{0,80}(?:No space"
            r"|too small|Bus error)"),
         62, 0.85, "NCCL could not create its shared-memory segment in /dev/shm (too small in a container?)",
         kind="shm", any_level=True),
    Rule("nccl_error", "nccl_error",
         _r(r"NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclInvalidUsage|ncclRemoteError"
            r"|DistBackendError"
            r"|NCCL WARN[^\n]{0,120}(?:error|fail|returned \d{1,3}\(|No route to host|refused"
            r"|timed? ?out|unreachable"
            # (no network interface to bootstrap or talk over: nccl src/bootstrap.cc "Bootstrap : no socket interface
            # found", src/transport/net_socket.cc "NET/Socket : no interface found")
            r"|no (?:socket )?interface found)"),
         58, 0.8, "NCCL (multi-GPU communication) failed", kind="nccl", any_level=True),
    # The engines' NCCL wrapper failing to dlopen the library, logged before it re-raises (vllm
    # distributed/device_communicators/pynccl_wrapper.py, SGLang's copy: "Failed to load NCCL library from %s. It is
    # expected if you are not running on NVIDIA/AMD GPUs. Otherwise, the nccl library might not exist, be corrupted or
    # it does not support the current platform %s."): a VLLM_NCCL_SO_PATH / SGLANG_NCCL_SO_PATH to a wrong file, or
    # an NCCL built for another CUDA (huggingface/trl#3925).
    Rule("nccl_library_unloadable", "nccl_error", _r(r"Failed to load NCCL library from ([^\s]{1,300}?)\.? ?(?:It is|$)"),
         62, 0.8, "the engine could not load the NCCL library {0}", kind="nccl_library", any_level=True,
         unsure=("missing_dependency",)),
    # NCCL refusing two ranks on one GPU (src/init.cc: "Duplicate GPU detected : rank 0 and rank 1 both on CUDA
    # device 8000"): the ranks' device assignment, not the network.
    Rule("nccl_duplicate_gpu", "nccl_error", _r(r"NCCL WARN Duplicate GPU detected"), 58, 0.8,
         "two ranks were given the same GPU, which NCCL refuses", kind="duplicate_gpu", any_level=True),
    # Ascend's collective library (torch_npu): "HCCL function error: hcclCommInitRootInfoConfig(...)", "DIST call
    # hccl api failed" (vllm-project/vllm-ascend#2712); CANN's error codes of the HCCL module are EI<4 digits>
    # ("EI0009: ... Transport init error", "EI0006: Getting socket times out"); HCCL's own log lines
    # ("[ERROR] HCCL(2717288,python3):... [hccl_socket_manager.cc:778] ... wait socket establish timeout"), also
    # with the error's name in front ("Get_Socket_Timeout(EI0006): Getting socket times out") and the operator
    # layer's report ("Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module").
    Rule("hccl_error", "nccl_error",
         _r(r"HCCL function error|call hccl api failed|\bHcclCommInit\w{0,30} failed|^EI\d{4}: |\b\w{1,40}\(EI\d{4}\): "
            r"|fails to invoke the Hccl\w{1,60} function of the hccl module"
            r"|^\[ERROR\] HCCL\(\d{1,10},[\w.-]{1,40}\)"),
         58, 0.8, "Ascend's collective library (HCCL) failed between the NPUs", kind="hccl", any_level=True),
    # The other accelerators' collective libraries, NCCL's counterparts: Kunlun's XCCL/BKCL ("[XCCL][init.cpp:1227]
    # host ... addr_window check failed", "error code= 1(at .../torch_xmlir/csrc/new_xccl/XCCLUtils.hpp:53)",
    # baidu/vLLM-Kunlun#382), Cambricon's CNCL, Moore Threads' MCCL, Intel's oneCCL: a failure or error of theirs.
    Rule("accelerator_ccl_error", "nccl_error",
         _r(r"^\[(?:XCCL|BKCL|CNCL|MCCL)\]\[[\w.]{1,60}:\d{1,6}\][^\n]{0,200}\b(?:failed|error|timeout|timed out)\b"
            r"|/new_xccl/XCCLUtils\.hpp:\d{1,6}|\b(?:BKCL|CNCL|MCCL|oneCCL|XCCL) (?:error|failed|timeout)\b"
            # oneCCL's own log tag for an error ("|CCL_ERROR| exchange_utils.cpp:202 sendmsg_fd: condition ... failed",
            # intel/ipex-llm#12081, vLLM on 8 Arc GPUs)
            r"|\|CCL_ERROR\|"),
         57, 0.75, "the accelerator's collective library (XCCL / BKCL / CNCL / MCCL / oneCCL, its NCCL) failed "
         "between its devices", kind="accelerator_ccl",
         any_level=True),
    # RDMA between GPUs and nodes outside NCCL: NVSHMEM (DeepEP's transport: "ibrc.cpp:418: non-zero status: 22
    # ibv_modify_qp failed", "NVSHMEM API called before NVSHMEM initialization has completed", nvshmem
    # src/modules/transport/ibrc, src/host/init) and the memory registration of PD disaggregation's KV transfer
    # ("Mooncake memory registration failed"; not "transfer failed for request ...": the collections file those under
    # three categories). Not "init failed for transport: IBGDA" (NVSHMEM tries each transport and goes on), and in
    # NVSHMEM's own check format only (NCCL logs an optional verb it tries at INFO, "Call to ibv_set_ece failed").
    Rule("rdma_transport", "nccl_error",
         _r(r"\bnon-zero status: \d{1,5} ibv_\w{2,40} failed\b|NVSHMEM API called before NVSHMEM initialization"
            r"|\bMooncake memory registration failed\b"
            # NCCL's own InfiniBand transport at WARN (nccl src/misc/ibvwrap.cc "Call to ibv_create_cq failed with
            # error Cannot allocate memory": most often the locked-memory limit; src/transport/net_ib.cc a work
            # completion in error, "NET/IB : Got completion from peer <addr> with status=12 opcode=...")
            r"|NCCL WARN Call to ibv_\w{2,40} failed|NCCL WARN NET/IB ?: Got completion from peer \S{1,80} with "
            r"(?:error|status=[1-9])"),
         # (above nccl_error, whose NCCL WARN ... failed reads NCCL's verbs too without their locked-memory advice)
         59, 0.8, "the RDMA transport between GPUs or nodes (NVSHMEM / NCCL's InfiniBand / the KV transfer engine) "
         "failed", kind="rdma",
         any_level=True),
    # The KV-cache transfer between disaggregated engines (vLLM's NixlConnector, Dynamo, llm-d) failing in NIXL or in
    # the UCX transport under it: UCX's own log format ("[1754890927.298391] [host:270:0] ib_mlx5dv_md.c:1100 UCX
    # ERROR mlx5_7: ibv_modify_qp(...) failed", openucx src/ucs/debug/log.c pads the level), NIXL's status codes
    # (nixl_types.h NIXL_ERR_BACKEND, NIXL_ERR_NOT_FOUND, ...; the Python bindings raise nixl._bindings.nixl*Error)
    # and its agent's own error (nixl_agent.cpp "registerMem: registration failed ..."). The collections file all
    # seven such logs under other (a setup of the transfer, not NCCL's collectives), so NCCL is the alternative.
    Rule("kv_transfer_failed", "other",
         _r(r"\bUCX {1,3}ERROR\b|\bNIXL_ERR_[A-Z_]{2,30}\b|\bnixl_agent\.cpp:\d{1,6}\] \w{1,40}: [^\n]{0,120}\bfail"),
         50, 0.5, "the KV-cache transfer between engines (NIXL over UCX) failed", kind="kv_transfer",
         unsure=("nccl_error",), any_level=True),
    # NCCL's own error trace: its NCCLCHECK macros log "<file>.cc:<line> -> <code>" at INFO as a failing call
    # returns through the stack (nccl src/include/checks.h), and "Failed to CUDA calloc N bytes" when its buffers
    # do not fit (src/include/alloc.h).
    Rule("nccl_error_trace", "nccl_error",
         _r(r"NCCL INFO [\w/.-]{1,200}\.(?:cc|cu|h):\d{1,6} -> [1-9]\d{0,2}\b|\bFailed to CUDA (?:calloc|malloc|host alloc)"
            r" \d{1,15} bytes"), 52, 0.7, "NCCL (multi-GPU communication) failed: its error trace is in the tail",
         kind="nccl", any_level=True),
    # (Often a consequence: a peer that died closes the connection; a real cause elsewhere in the tail outranks it.)
    Rule("gloo_transport", "nccl_error", GLOO_TRANSPORT, 54, 0.7,
         "torch.distributed's gloo transport between the ranks failed (a peer closed the connection or stalled)",
         kind="timeout", any_level=True),
    Rule("collective_timeout", "nccl_error",
         _r(r"Watchdog caught collective operation timeout|collective operation timeout|DistNetworkError"
            r"|Timed out after \d+ seconds waiting for clients|TCPStore[^\n]{0,80}(?:timeout|timed out)"
            r"|\bBarrier [\w ]{0,30}timed out"
            # torch's store-based barrier of init_process_group (torch/distributed/distributed_c10d.py
            # _store_based_barrier: "Timed out initializing process group in store based barrier on rank 1, ...")
            r"|Timed out initializing process group in store based barrier"
            # torch's c10d store socket waiting for a peer that never came (torch/csrc/distributed/c10d/socket.cpp:
            # "[c10d] waitForInput: socket SocketImpl(...) timed out after 1800000ms", vllm-project/vllm-ascend#2248)
            r"|\[c10d\] waitForInput: socket\b[^\n]{0,300}\btimed out after \d{1,10} ?ms"),
         50, 0.7, "a multi-GPU collective timed out (one rank stalled or died)", kind="timeout", any_level=True),
)
