"""deploybot's own Prometheus metrics, one registry per app instance (never the process-global default, so two
apps in one process, or two tests, never see each other's counts).

Most figures come from the domain events the pipeline already emits (bot/events.py): a `StoryMetrics` watches one
story's events on their way to its Thread, so the pipeline itself carries no metrics code. The rest are read at
scrape time (active followers, SSH connect failures) or sampled by a small task (event-loop lag).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from bot.events import ApprovalDecided, Crashed, Diagnosed, Event, Failed, Launched, PlanRejected, Ready, Thread

#: Slack's limit is 3 s: the buckets are fine below it.
ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)
#: From the slash command to the PID in the thread: a probe and a launch over SSH, seconds to a minute.
PID_BUCKETS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

OUTCOMES = ("ready", "crashed", "rejected", "failed")
DECISIONS = ("approved", "denied", "expired", "superseded")
LAG_INTERVAL_S = 0.5


class _SshFailures(Collector):
    """`deploybot_ssh_connect_failures_total{host}`, read at scrape time from the pool's tally."""

    def __init__(self, tally: Callable[[], Tally[str]]) -> None:
        self._tally = tally

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily("deploybot_ssh_connect_failures", "SSH connect attempts that failed, by host",
                                     labels=["host"])
        for host, count in sorted(self._tally().items()):
            family.add_metric([host], count)
        yield family


class BotMetrics:
    def __init__(self, *, followers: Callable[[], int] = lambda: 0,
                 ssh_failures: Callable[[], Tally[str]] = Tally) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.deployments = Counter("deploybot_deployments", "Deployments by outcome (the first of ready, crashed "
                                   "before ready, plan rejected, launch failed)", ["outcome"], registry=r)
        self.crashes = Counter("deploybot_crashes", "Crashes by the diagnoser's category", ["category"], registry=r)
        self.relaunches = Counter("deploybot_automatic_relaunches",
                                  "Relaunches deploybot made on its own, without a person asking", registry=r)
        self.approvals = Counter("deploybot_approvals", "Approvals by decision", ["decision"], registry=r)
        self.ack = Histogram("deploybot_ack_seconds", "Slack request received -> ack sent", buckets=ACK_BUCKETS,
                             registry=r)
        self.request_to_pid = Histogram("deploybot_request_to_pid_seconds",
                                        "Slash command received -> the server's PID known (told in the thread)",
                                        buckets=PID_BUCKETS, registry=r)
        self.followers = Gauge("deploybot_active_followers", "Deployments whose log is being followed now",
                               registry=r)
        self.followers.set_function(lambda: float(followers()))
        self.loop_lag = Histogram("deploybot_event_loop_lag_seconds", "How late a timer fires on each event loop "
                                  "(slack: the one that acks; stories: the pipeline's)", ["loop"],
                                  buckets=LAG_BUCKETS, registry=r)
        self.loop_lag_last = Gauge("deploybot_event_loop_lag_last_seconds", "The latest event-loop lag sample",
                                   ["loop"], registry=r)
        r.register(_SshFailures(ssh_failures))
        for outcome in OUTCOMES:  # every series exists from the start, at 0 (a rate() needs its first point)
            self.deployments.labels(outcome)
        for decision in DECISIONS:
            self.approvals.labels(decision)

    def exposition(self) -> bytes:
        """The standard text format (what Prometheus scrapes)."""
        return generate_latest(self.registry)

    def story(self, *, requested_at: float | None = None) -> StoryMetrics:
        return StoryMetrics(self, requested_at=requested_at)

    def observe_lag(self, loop: str, seconds: float) -> None:
        self.loop_lag.labels(loop).observe(seconds)
        self.loop_lag_last.labels(loop).set(seconds)


class StoryMetrics:
    """Counts what one story (one Thread's events) says. A story has one outcome, its first terminal event: a
    server that is ready and crashes days later counts as ready, and its crash in `deploybot_crashes_total`.
    `requested_at` (time.perf_counter() when the slash command arrived) makes the first launch a request-to-PID."""

    def __init__(self, metrics: BotMetrics, *, requested_at: float | None = None) -> None:
        self.metrics = metrics
        self.requested_at = requested_at
        self.outcome: str | None = None
        self._crash_pending = False

    def see(self, event: Event) -> None:
        m = self.metrics
        if isinstance(event, Launched):
            if self.requested_at is not None and not event.already_running:
                m.request_to_pid.observe(time.perf_counter() - self.requested_at)
            self.requested_at = None
        elif isinstance(event, Ready):
            self._end("ready")
        elif isinstance(event, Crashed):
            self._crash_pending = True  # its category comes with the Diagnosed that follows
            self._end("crashed")
        elif isinstance(event, Diagnosed) and self._crash_pending:
            # (a `diagnose` asked for in a thread is no crash: only the diagnosis of a Crashed counts)
            self._crash_pending = False
            m.crashes.labels(event.diagnosis.category).inc()
        elif isinstance(event, PlanRejected):
            self._end("rejected")
        elif isinstance(event, Failed) and event.step == "launch":
            self._end("failed")
        elif isinstance(event, ApprovalDecided):
            m.approvals.labels(event.decision).inc()

    def _end(self, outcome: str) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.metrics.deployments.labels(outcome).inc()


class ObservedThread:
    """A Thread that shows each event to a StoryMetrics before passing it on."""

    def __init__(self, inner: Thread, story: StoryMetrics) -> None:
        self.inner = inner
        self.story = story

    async def emit(self, event: Event) -> None:
        self.story.see(event)
        await self.inner.emit(event)


async def sample_loop_lag(metrics: BotMetrics, loop_name: str, interval_s: float = LAG_INTERVAL_S) -> None:
    """Forever: sleep `interval_s` and record how much later than asked the loop woke us (work hogging it)."""
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        await asyncio.sleep(interval_s)
        metrics.observe_lag(loop_name, max(0.0, loop.time() - started - interval_s))
