"""Next steps for a crash outside the taxonomy (``other``): built from what the tail shows (the exception, where
it was raised, how far the start-up got, how the process ended) and the installed version, never a bare "read the
log". When the root cause really is not in the tail (only "Engine core initialization failed" is), the steps say
which process failed and what to capture.
"""

from __future__ import annotations

from bot.diagnose.advice.memory import advise_busy_gpu, advise_kv
from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.types import Advice, Finding
from bot.diagnose.advice.version import installed_version
from bot.models import Fix, PlanOverrides
from planners.compat import engine_label
from planners.engines import registry

_TRIGGERS = {
    "kv_cache_insufficient": "the KV cache sizing", "cuda_graph_oom": "CUDA graph capture",
    "speculative_config_invalid": "speculative decoding (MTP/EAGLE)",
    "model_files_missing_or_corrupt": "the checkpoint",
    "jit_compile_failure": "a JIT-compiled kernel", "nccl_error": "multi-GPU communication",
    "quantization_unsupported": "the quantization kernels", "unsupported_architecture": "the model implementation",
    "bad_argument": "a launch flag",
}


def _where_and_when(f: Finding) -> str:
    """' in vllm/v1/worker/gpu_model_runner.py (_dummy_run), after: weights loaded (25.3 GB)' or ''."""
    structure = f.structure
    if structure is None:
        return ""
    exc = structure.exception_at(f.pos) or structure.last_exception
    where = f" in {exc.where()}" if exc is not None and exc.where() else ""
    phase = structure.phase_words()
    # (no start-up line at all in the tail says nothing about when: a pasted excerpt or a crash while serving shows
    # none either, so only a line the start-up printed places it)
    return where + (f", after: {phase}" if phase else "")


def _package_of(path: str) -> str | None:
    """The installed package a frame's file belongs to ('.../site-packages/outlines/models/x.py' -> 'outlines')."""
    _, marker, rest = path.rpartition("-packages/")
    head = rest.split("/", 1)[0] if marker and "/" in rest else ""
    return head if head.isidentifier() else None


def _search_step(f: Finding, s: PlanView) -> str:
    text = (f.decisive.text if f.decisive else f.cause)[:100]
    version = installed_version(s)
    engine = engine_label(s.engine, version) if s.engine else "the engine"
    plugin = s.engine_plugin
    where = plugin.issues_url if plugin is not None and plugin.issues_url else "the engine's issue tracker"
    upgrade = f"; if {engine} is not the latest release, a newer one may carry the fix" if version else \
        "; note the engine version with the report"
    return f"search {where} for \"{text}\"{upgrade}"


def _unsure_step(f: Finding, s: PlanView) -> str | None:
    if f.alternatives and f.alternatives[0] == "kv_cache_insufficient" and f.confidence < 0.5:
        # (raised in the KV cache's own code, most often its prefix cache: SGLang's radix tree, vLLM's block pool;
        # turning that cache off is the one switch that tells)
        return f"the exception was raised in the KV cache's code: relaunching with {s.flag('no_prefix_cache')} " \
               f"(the prefix cache off) shows whether the prefix cache triggers it"
    triggers = [_TRIGGERS[c] for c in f.alternatives if c in _TRIGGERS]
    if not triggers:
        return None
    return f"the exception was raised in code for {' and '.join(triggers)}: relaunching with it off or changed " \
           f"shows whether it is the trigger"


#: The first step of the kinds whose step is fixed text (it quotes nothing of the tail or the plan).
_FIXED_FIRST_STEPS: dict[str, str] = {
    "transformers_too_new": "install the transformers version this engine release pins (see its requirements), or "
                            "upgrade the engine",
    "import_warning": "an import failed earlier (quoted) and the crash is most likely its consequence: fix that "
                      "install first (a compiled package built for another torch/CUDA, or a missing module)",
    "disk_full": "free space on the disk the engine wrote to (`df -h` on the host: the model folder, HF_HOME, the JIT "
                 "caches under ~/.cache, /tmp), or point HF_HOME / TMPDIR at a larger disk, then relaunch",
    "fd_limit": "raise the open-files limit of the engine's process (ulimit -n 65536 in its shell, LimitNOFILE= in a "
                "systemd unit, --ulimit nofile=65536:65536 for docker), then relaunch",
    "proxy": "the host's HTTP proxy intercepted the server's own warm-up request: add the server's address to "
             "no_proxy / NO_PROXY (e.g. no_proxy=localhost,127.0.0.1,0.0.0.0) in the engine's environment",
    "fork": "CUDA was initialised in the parent before the engine forked its workers: have them spawned "
            "(VLLM_WORKER_MULTIPROC_METHOD=spawn for vLLM), and in a script do not touch torch.cuda before the "
            "engine starts (guard the entry point with `if __name__ == \"__main__\":`)",
    "died_serving": "the server is down although its port may still answer: restart the deployment (`restart` in "
                    "its Slack thread); the engine's own traceback (the first ERROR of the engine core / scheduler, "
                    "before the request errors) names the cause: keep the log from the launch on, and note the "
                    "request or load that was running when it died",
    # (Ray keeps a placement group's GPUs after the run that made it failed; `ray status` lists them as reserved)
    "ray_gpus_reserved": "the GPUs are there but Ray has them reserved: `ray status` shows GPUs held by placement "
                         "groups; a failed earlier run leaves its group behind: `ray stop --force` on every node and "
                         "start the cluster again; when a launcher runs the engine inside a Ray actor, give that actor "
                         "as many GPUs as the tensor-parallel size, or on one node use "
                         "--distributed-executor-backend mp",
    "kv_transfer": "the KV-cache transfer (NIXL over UCX) between the prefill and decode engines failed: check the "
                   "RDMA devices UCX may use (`ibv_devinfo`; UCX_NET_DEVICES names them), that GPU memory can be "
                   "registered (the nvidia-peermem module or dma-buf; the locked-memory limit, `ulimit -l "
                   "unlimited`), and that each engine reaches the other's address and side-channel port; "
                   "UCX_LOG_LEVEL=debug names the failing call",
    # (a process that ended without an error line or exit status: bot/diagnose/ended.py)
    "vanished": "find what ended it on the host: `uptime` and `last -x reboot | head -3` (a restart), "
                "`dmesg -T | grep -i -E 'killed process|out of memory'` (the OOM killer), the container runtime's or "
                "scheduler's own log (`docker ps -a`, `journalctl`); then relaunch (`restart` in this thread)",
    "clean_exit": "find who stopped it: a `stop` of this deployment shows in its thread and the audit trail; "
                  "otherwise a supervisor, container runtime or job scheduler sent it SIGTERM, and its own log says "
                  "so; then relaunch (`restart` in this thread)",
}

#: Kinds whose cause is not an engine bug, so searching the engine's issue tracker is no step for them.
_NO_SEARCH = frozenset({"transformers_too_new", "import_warning", "disk_full", "fd_limit", "proxy", "hang", "fork",
                        "ray_gpus_reserved", "vanished", "clean_exit", "kv_transfer"})


def _first_step(f: Finding, s: PlanView) -> str:
    context = _where_and_when(f)
    fixed = _FIXED_FIRST_STEPS.get(f.kind or "")
    if fixed:
        return fixed
    if f.kind == "segfault":
        return f"a native crash{context}: relaunch with {s.flag('no_graph')} or another attention backend to isolate " \
               f"it; check engine, torch and driver versions match"
    if f.kind == "kernel_crash":
        return f"a CUDA kernel crashed{context}: rerun with CUDA_LAUNCH_BLOCKING=1 to name the kernel; try " \
               f"without CUDA " \
               f"graphs ({s.flag('no_graph')}) or with another attention backend"
    if f.kind == "root_cause_elsewhere":
        return f"only the consequence is in this tail (quoted){context}: the failing process (engine core / TP " \
               f"worker) " \
               f"printed its error before it; capture the log from the launch on (or relaunch with one GPU and " \
               f"{s.flag('no_graph')}) to see it"
    if f.kind == "hang":
        return f"the scheduler made no progress{context} and the engine's watchdog stopped it: a batch hung on " \
               f"the GPU (a kernel, NCCL between ranks, or a very long request); relaunch with " \
               f"{s.flag('no_graph')} to see whether CUDA graphs are involved, and look for an NCCL timeout or a " \
               f"stuck rank in the other ranks' lines"
    if f.kind == "stall":
        return f"a worker stopped answering while the server was up: the engine is hung, not crashed, and " \
               f"will not recover by itself; `py-spy dump --pid <worker pid>` shows where it waits (a kernel, an " \
               f"NCCL collective, a stuck rank), then restart the deployment; if it recurs, relaunch with " \
               f"{s.flag('no_graph')} to see whether CUDA graphs are involved"
    if f.kind == "signal":
        return f"the process was stopped by a signal{context}; check who sent it (a person, a supervisor, a timeout)"
    structure = f.structure
    exc = (structure.exception_at(f.pos) or structure.last_exception) if structure else None
    if exc is not None:
        package = _package_of(exc.frames[-1].path) if exc.frames else None
        if package and package != "python" and not registry.is_engine(package):
            return f"the engine raised {exc.qualname}{context}: raised inside {package}, so most likely the " \
                   f"installed " \
                   f"{package} does not match what this engine release expects: install the {package} version the " \
                   f"engine pins (see its requirements)"
        raised = f"the engine raised {exc.qualname}" if exc.qualname else "the engine failed"
        return f"{raised}{context}: not a known misconfiguration, most likely an engine bug " \
               f"or a version mismatch between the engine and its packages (torch, transformers, flashinfer)"
    return f"the engine stopped{context} without an error this diagnoser knows; the quoted lines are the last errors"


def advise_other(f: Finding, s: PlanView) -> Advice:
    if f.kind == "busy_gpu" and f.match is not None:
        return advise_busy_gpu(f, s)
    if f.kind == "runtime":  # an OOM while serving: the memory outside the KV pool, as the KV advice sizes it
        return advise_kv(f, s)
    steps = [_first_step(f, s)]
    unsure = _unsure_step(f, s)
    if unsure:
        steps.append(unsure)
    if f.kind not in _NO_SEARCH:
        steps.append(_search_step(f, s))
    fix: Fix | None = None
    if s.plan and s.plan.speculative == "mtp" and f.kind in (None, "root_cause_elsewhere", "kernel_crash"):
        steps.append("the plan uses MTP: relaunching without speculative decoding shows whether MTP triggers it")
        fix = Fix(summary="relaunch without speculative decoding to isolate the cause",
                  overrides=PlanOverrides(speculative="none"))
    return steps, fix
