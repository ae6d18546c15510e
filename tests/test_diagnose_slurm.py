"""Crashes Slurm caused (bot/diagnose/slurm_rules.py): each cause in wordings of other Slurm releases and plugins
than the ones the rules were first written from, the final-state line the Slurm backend adds to a tail, and the
lines that look alike but are not the cause (a job cancelled by its owner, an engine's own timeout)."""

from __future__ import annotations

import pytest

from bot.backends.slurm import state_line
from bot.diagnose import diagnose
from bot.handles import SlurmJob

ENGINE_TAIL = ("[2026-12-01 23:40:00] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
               "[2026-12-01 23:40:01] The server is fired up and ready to roll!\n")


@pytest.mark.parametrize(("category", "decisive", "extra"), [
    # the job-level line alone (a batch job whose engine ran in the batch step, no srun)
    ("time_limit", "DUE TO TIME LIMIT",
     "slurmstepd: error: *** JOB 77 ON node001 CANCELLED AT 2025-03-04T05:06:07 DUE TO TIME LIMIT ***\n"),
    # only the backend's final-state line (the log was cut before slurmstepd wrote)
    ("time_limit", "ended TIMEOUT", "slurm: job 77 on node node001 ended TIMEOUT (TimeLimit), exit code 0:15\n"),
    ("preemption", "DUE TO PREEMPTION",
     "slurmstepd: error: *** STEP 78.0 ON node001 CANCELLED AT 2025-03-04T05:06:07 DUE TO PREEMPTION ***\n"
     "srun: error: node001: task 0: Terminated\n"),
    ("preemption", "ended PREEMPTED", "slurm: job 78 ended PREEMPTED, exit code 0:15\n"),
    # before 21.08: "oom-kill event(s)" and the cgroup out-of-memory handler
    ("cgroup_oom", "oom-kill event",
     "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=79.batch. Some of your processes may have been "
     "killed by the cgroup out-of-memory handler.\n"),
    # jobacct_gather's own limit check
    ("cgroup_oom", "exceeded memory limit",
     "slurmstepd: error: StepId=80.0 exceeded memory limit (734003200 > 52428800), being killed\n"
     "slurmstepd: error: Exceeded job memory limit\n"),
    ("cgroup_oom", "ended OUT_OF_MEMORY", "slurm: job 81 on node node002 ended OUT_OF_MEMORY, exit code 0:125\n"),
])
def test_slurm_ended_the_job(category: str, decisive: str, extra: str) -> None:
    result = diagnose(ENGINE_TAIL + extra)
    assert result.category == category, result
    assert decisive in result.evidence[0].text
    assert result.next_steps


def test_a_job_its_owner_cancelled_or_an_engine_timeout_is_not_a_slurm_cause() -> None:
    cancelled = ENGINE_TAIL + "slurmstepd: error: *** JOB 82 ON node001 CANCELLED AT 2025-03-04T05:06:07 ***\n"
    assert diagnose(cancelled).category not in ("time_limit", "preemption", "cgroup_oom")
    engine_timeout = ("[2026-12-01 23:40:00] ERROR: request 12 exceeded the time limit of 600 s\n"
                      "torch.distributed.DistBackendError: NCCL error: Timed out after 600 seconds waiting for "
                      "clients\n")
    assert diagnose(engine_timeout).category != "time_limit"


def test_the_state_line_names_the_end_as_slurm_has_it() -> None:
    job = SlurmJob(job_id="12", job_name="Qwen3-32B-30000", log_path="/shared/logs/Qwen3-32B-30000.log", port=30000)
    ended = '{"state": "TIMEOUT", "reason": "TimeLimit", "exit_code": "0:15", "node": "n1"}'
    assert state_line(job, ended) == "slurm: job 12 on node n1 ended TIMEOUT (TimeLimit), exit code 0:15"
    assert state_line(job, '{"state": "RUNNING", "reason": "None", "node": "n1"}') is None  # not ended: no line
    assert state_line(job, '{"state": "UNKNOWN"}') is None
    assert state_line(job, "squeue: error: Invalid user") is None
