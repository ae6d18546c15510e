"""Advice for a job Slurm ended itself (bot/diagnose/slurm_rules.py): the settings to change are the host's Slurm
backend settings in app.yaml (`time_limit:`, `partition:`, `qos:`, `memory:`), not the engine's flags."""

from __future__ import annotations

from bot.diagnose.advice.plan_view import PlanView, gib
from bot.diagnose.types import Advice, Finding


def advise_time_limit(f: Finding, s: PlanView) -> Advice:
    if f.kind == "startup_timeout":
        return ([
            "the platform that runs the engine stopped it for taking too long to start (its start-up allowance is "
            "shorter than loading the weights, compiling and capturing CUDA graphs): raise that allowance (Modal: the "
            "function's timeout / startup timeout; Kubernetes: the startupProbe's failureThreshold x periodSeconds)",
            "or make the start shorter: weights already on local disk (a volume or cache, not a download at start), "
            "no CUDA graph capture or torch.compile on the first start (--enforce-eager / --disable-cuda-graph), a "
            "smaller or quantized checkpoint",
        ], None)
    return ([
        "Slurm cancelled the job when it reached its time limit: give the host's Slurm backend a longer "
        "`time_limit:` in app.yaml, within the partition's MaxTime (`sinfo -o '%P %l'`), then relaunch",
        "an inference server runs until it is stopped: where the partition's limit is short, ask the cluster's "
        "admins for a partition or QoS meant for long-running services",
    ], None)


def advise_preemption(f: Finding, s: PlanView) -> Advice:
    return ([
        "a job of a higher-priority partition or QoS preempted this one (slurm.conf PreemptType / PreemptMode): "
        "relaunch it (it waits in the queue until GPUs are free)",
        "to keep it running, use a partition or QoS that is not preemptible (`partition:` / `qos:` of the host's "
        "Slurm backend in app.yaml)",
    ], None)


def advise_cgroup_oom(f: Finding, s: PlanView) -> Advice:
    weights = f" (the checkpoint is {gib(s.plan.weights_bytes)})" if s.plan else ""
    return ([
        "the job used more host RAM than Slurm gave it (its memory cgroup; GPU memory is not the problem): the "
        f"weights pass through RAM while loading{weights}",
        "ask for more with `memory:` in the host's Slurm backend settings (sbatch --mem), at least the checkpoint's "
        "size plus a few GiB, and see what it used with `sacct -j JOBID -o JobID,State,MaxRSS,ReqMem`",
    ], None)
