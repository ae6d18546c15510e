"""The pipeline's state and the helpers every part uses: config, store, backends, locks, probing.

`Pipeline` (bot/pipeline/__init__.py) is this base with its three jobs mixed in: run (parse -> follow,
bot/pipeline/run.py), approvals (bot/pipeline/approvals.py) and ops (stop, restart, status, logs, diagnose: the
operations surfaces call, bot/pipeline/ops.py). The parts call each other through `self`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bot.backends.base import Backend
from bot.backends.registry import BackendPool
from bot.config import AppConfig, HostConfig, Secrets
from bot.diagnose.runner import DiagnosisRunner
from bot.discovery import Discovery, parse_resolving
from bot.early_probe import EarlyProbes
from bot.events import Probed, Thread
from bot.models import DRAFTER_KINDS, DeployRequest, Deployment, HostFacts, LaunchPlan, ParseError, PlanFailure, PlanOverrides
from bot.pipeline.types import InteractiveApprover, request_of
from bot.redact import redact
from bot.remote import RemotePool
from bot.request import Inventory
from bot.store import Store
from planners.plan import make_plan


class PipelineBase:
    def __init__(
        self,
        config: AppConfig,
        store: Store,
        *,
        secrets: Secrets | None = None,
        remotes: RemotePool | None = None,
        approver: InteractiveApprover | None = None,
        diagnoser: DiagnosisRunner | None = None,
        backends: BackendPool | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.secrets = secrets or Secrets()
        self.remotes = remotes or RemotePool(config.hosts)
        #: Where each host's deployments run (app.yaml `backend:`): probe, launch, watch, stop, tail go through it.
        self.backends = backends or BackendPool(config.hosts, self.remotes)
        self.approver = approver
        self.discovery = Discovery(config, store, self.remotes, self.backends)
        #: Diagnosis runs off the event loop under a deadline (bot/diagnose/runner.py).
        self.diagnoser = diagnoser or DiagnosisRunner()
        self._host_locks: dict[str, asyncio.Lock] = {}
        self.early_probes = EarlyProbes()
        self.following: set[str] = set()  # ids of the deployments whose log is followed now (a metrics gauge)

    def redact(self, text: str) -> str:
        return redact(text, self.secrets.values())

    def inventory(self) -> Inventory:
        """app.yaml's hosts with what each one's last probe saw (models; GPUs where app.yaml has no `gpus:`)."""
        views = self.store.host_views_sync()
        gpus = {host: desc for host, view in views.items() if (desc := view.gpu_description())}
        drafters = {h: v.drafter_names for h, v in views.items()}
        return Inventory.from_config(self.config, {h: v.models for h, v in views.items()}, gpus, drafters)

    async def parse(self, text: str) -> DeployRequest | ParseError:
        """Read a request; a name that does not resolve gets one probe of its host and a second reading."""
        parsed, _ = await parse_resolving(text, self.inventory, self.discovery)
        return parsed

    def host_lock(self, host: str) -> asyncio.Lock:
        return self._host_locks.setdefault(host, asyncio.Lock())

    def host_config(self, host: str) -> HostConfig:
        return self.config.hosts[host]

    def backend(self, host: str) -> Backend:
        return self.backends.get(host)

    @staticmethod
    def _probe_extra(request: DeployRequest | None) -> dict[str, Any]:
        # the drafter folders only when a drafter is asked for (a backend without them serves everything else)
        drafting = request is not None and request.speculative in DRAFTER_KINDS
        return {"drafters": True, "draft_model": request.draft_model} if request and drafting else {}

    def probe_early(self, request: DeployRequest) -> None:
        """Start now the probe that `start` will make for this request (bot/early_probe.py), while the surface
        posts its first messages; `plan` takes it."""
        if request.action != "start" or request.host not in self.config.hosts:
            return
        host, extra = request.host, self._probe_extra(request)
        self.early_probes.begin(host, (request.model, tuple(sorted(extra.items()))),
                                lambda: self.backend(host).probe(model=request.model, **extra))

    async def _probe(self, host: str, thread: Thread, model: str | None,
                     request: DeployRequest | None = None, *, early: bool = False) -> HostFacts:
        started = time.perf_counter()
        extra = self._probe_extra(request)
        taken = self.early_probes.take(host, (model, tuple(sorted(extra.items())))) if early else None
        if taken is not None:
            started, probing = taken
            facts = await probing
        else:
            facts = await self.backend(host).probe(model=model, **extra)
        facts = await self._with_engine_help(host, facts)
        await self.discovery.record(facts)
        # Told without the engines' --help texts (about 110 KB, never shown): every event is redacted string by
        # string before it is rendered, and on these that took about 35 ms of CPU before the plan could start.
        told = facts.model_copy(update={"engine_help": {}}) if facts.engine_help else facts
        await thread.emit(Probed(facts=told, seconds=time.perf_counter() - started))
        return facts

    async def _with_engine_help(self, host: str, facts: HostFacts) -> HostFacts:
        """Attach each installed engine's `--help` (cached per host and version) so the planner validates flags."""
        helps: dict[str, str] = {}
        missing: list[str] = []
        for name, install in facts.engines.items():
            if install.version is None:
                continue
            cached = await self.store.engine_help(host, name, install.version)
            if cached is not None:
                helps[name] = cached
            else:
                missing.append(name)
        if missing:
            fetched = await self.backend(host).engine_help(missing)
            for name, text in fetched.items():
                version = facts.engines[name].version
                if text and version:
                    await self.store.save_engine_help(host, name, version, text)
                    helps[name] = text
        return facts.model_copy(update={"engine_help": helps}) if helps else facts

    async def replan(self, dep: Deployment, overrides: PlanOverrides) -> tuple[LaunchPlan | PlanFailure, HostFacts]:
        """The deployment's request planned again on a fresh probe with `overrides` (RemoteError when the host
        cannot be probed)."""
        extra = {"drafters": True, "draft_model": dep.plan.draft_model} if dep.plan.draft_model else {}
        facts = await self.backend(dep.host).probe(model=dep.model, **extra)
        facts = await self._with_engine_help(dep.host, facts)
        request = request_of(dep.plan)
        if overrides.port is None and dep.plan.port in facts.listening_ports:
            # The dead server's port was taken meanwhile (by something else: it is not running): the fix takes the
            # next free one rather than failing to plan; the argv diff shows the new --port.
            request = request.model_copy(update={"port": None})
        return make_plan(request, facts, self.host_config(dep.host), self.config.policy, overrides), facts

    async def close(self) -> None:
        await self.remotes.close()
        await self.diagnoser.close()
