"""Rules for what Slurm prints when it ends a job itself: the time limit, preemption, the job's memory cgroup.
Engine-neutral: the engine only receives a signal; the cause is in slurmstepd's lines in the job's log, or in the
final-state line the Slurm backend adds to the tail ("slurm: job 12 on node n1 ended TIMEOUT (TimeLimit), exit code
0:15", bot/backends/slurm.py `state_line`).

Sources, each Slurm's own text:
- "slurmstepd-NODE: error: *** JOB 12 ON NODE CANCELLED AT 2026-12-01T22:53:31 DUE TO TIME LIMIT ***" and
  "... DUE TO PREEMPTION ***": written by slurmstepd (src/slurmd/slurmstepd/req.c) into the job's output; both
  captured from slurm-wlm 22.05 in tests/slurm.py's cluster (tests/test_slurm_cluster.py,
  tests/test_slurm_backend.py);
- the cgroup OOM: "slurmstepd: error: Detected 1 oom_kill event in StepId=18835145.batch. Some of the step tasks have
  been OOM Killed." (task/cgroup, Slurm 21.08 and later), before 21.08 "Detected 1 oom-kill event(s) in StepId=7.batch.
  Some of your processes may have been killed by the cgroup out-of-memory handler.", srun's "srun: error: node12:
  task 0: Out Of Memory", and jobacct_gather's "StepId=7.batch exceeded memory limit (734003200 > 52428800), being
  killed"; job states TIMEOUT, PREEMPTED, OUT_OF_MEMORY from squeue(1) JOB STATE CODES.
Patterns are linear-time: bounded gaps only.
"""

from __future__ import annotations

from bot.diagnose.types import Rule, r

SLURM_RULES: tuple[Rule, ...] = (
    # Above everything an engine prints: what follows Slurm's SIGTERM (a traceback, "Killed") is its consequence.
    Rule("slurm_time_limit", "time_limit",
         r(r"CANCELLED AT \S{1,40} DUE TO TIME LIMIT|^slurm: job \S{1,40}(?: on node \S{1,100})? ended TIMEOUT\b"),
         97, 0.95, "Slurm ended the job at its time limit", any_level=True),
    Rule("slurm_preempted", "preemption",
         r(r"CANCELLED AT \S{1,40} DUE TO PREEMPTION|^slurm: job \S{1,40}(?: on node \S{1,100})? ended PREEMPTED\b"),
         97, 0.95, "a job of higher priority preempted this one: Slurm took its GPUs back", any_level=True),
    Rule("slurm_cgroup_oom", "cgroup_oom",
         r(r"Detected \d{1,9} oom[-_]kill events?\b|exceeded memory limit \(\d{1,20} > \d{1,20}\), being killed"
           r"|: task \d{1,9}: Out Of Memory\b|^slurm: job \S{1,40}(?: on node \S{1,100})? ended OUT_OF_MEMORY\b"),
         88, 0.9, "the job ran out of the host memory Slurm gave it (its memory cgroup), not of GPU memory",
         any_level=True),
)
