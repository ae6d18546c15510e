"""Model discovery: what each host's probe saw is the inventory, and it is kept fresh.

- `probe_hosts()` probes hosts all at once (one round trip each) and stores each view (bot/hostview.py);
  probes of one host that overlap share one round trip.
- `refresh_forever()` does that for every host at `serve` start and then every `discovery.refresh_interval_s`.
- `parse_resolving()` reads a request; when a name does not resolve (unknown_model, not_on_host), it probes the
  host the text names (every host when it names none) ONCE and reads the request again, so a folder copied onto
  a host after the bot started is found by the next request that names it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Iterable

from bot.config import AppConfig
from bot.backends.registry import BackendPool
from bot.hostview import HostView
from bot.inventory import Inventory
from bot.models import DeployRequest, HostFacts, ParseError
from bot.parse.normalise import normalised
from bot.remote import RemotePool
from bot.request import parse_request
from bot.store import Store

log = logging.getLogger(__name__)

#: Parse errors a fresh probe can cure: the name may be a folder that appeared since the last probe.
RESOLVE_BY_PROBING = frozenset({"unknown_model", "not_on_host"})


class Discovery:
    def __init__(self, config: AppConfig, store: Store, remotes: RemotePool,
                 backends: BackendPool | None = None) -> None:
        self.config = config
        self.store = store
        self.remotes = remotes
        #: Each host is probed through its backend (a Slurm host's GPUs come from its scheduler, not its login node).
        self.backends = backends or BackendPool(config.hosts, remotes)
        self._inflight: dict[str, asyncio.Future[HostView]] = {}
        self.last_round_s: float | None = None  # how long the last probe_hosts() took (serve logs it)

    async def record(self, facts: HostFacts) -> HostView:
        """Store what a probe saw (any probe: discovery's own, or the one a deployment makes)."""
        view = HostView.from_facts(facts, python=self.config.hosts[facts.host].python)
        await self.store.save_host_view(view)
        return view

    async def probe_host(self, host: str) -> HostView:
        running = self._inflight.get(host)
        if running is not None and not running.done():
            return await asyncio.shield(running)
        future = asyncio.ensure_future(self._probe_and_record(host))
        self._inflight[host] = future
        try:
            return await asyncio.shield(future)
        finally:
            if self._inflight.get(host) is future and future.done():
                del self._inflight[host]

    async def _probe_and_record(self, host: str) -> HostView:
        facts = await self.backends.get(host).probe()
        return await self.record(facts)

    async def probe_hosts(self, hosts: Iterable[str] | None = None) -> dict[str, HostView | BaseException]:
        """Probe these hosts (default: all) at once; a host that fails is logged and keeps its last view."""
        names = list(hosts) if hosts is not None else list(self.config.hosts)
        started = time.perf_counter()
        results = await asyncio.gather(*(self.probe_host(h) for h in names), return_exceptions=True)
        self.last_round_s = time.perf_counter() - started
        out: dict[str, HostView | BaseException] = {}
        for name, result in zip(names, results):
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException):
                log.warning("discovery: %s not probed: %s", name, result)
            out[name] = result
        return out

    async def refresh_forever(self) -> None:
        """Every host at once now, then again every refresh interval (until cancelled)."""
        interval = self.config.discovery.refresh_interval_s
        while True:
            results = await self.probe_hosts()
            ok = sum(1 for r in results.values() if isinstance(r, HostView))
            log.info("discovery: %d of %d hosts probed in %.2f s", ok, len(results), self.last_round_s or 0)
            if interval <= 0:
                return
            await asyncio.sleep(interval)


def hosts_named(text: str, hosts: Iterable[str]) -> list[str]:
    """The configured hosts whose name stands as a word in the text, both read as the parser reads them (case,
    dash and space variants ignored)."""
    normal = normalised(text).lower()
    found = []
    for host in hosts:
        pattern = rf"(?<![a-z0-9._-]){re.escape(normalised(host).lower())}(?![a-z0-9_-]|\.[a-z0-9])"
        if re.search(pattern, normal):
            found.append(host)
    return found


async def parse_resolving(
    text: str, inventory: Callable[[], Inventory], discovery: Discovery
) -> tuple[DeployRequest | ParseError, list[str]]:
    """The request read against the inventory; on a name that does not resolve, one probe of the host named
    (all hosts when none is) and a second reading. Returns the result and the hosts probed for it."""
    parsed = parse_request(text, inventory())
    if not (isinstance(parsed, ParseError) and parsed.kind in RESOLVE_BY_PROBING):
        return parsed, []
    hosts = hosts_named(text, discovery.config.hosts) or list(discovery.config.hosts)
    results = await discovery.probe_hosts(hosts)
    again = parse_request(text, inventory())
    failed = [f"{host} could not be probed ({result})" for host, result in results.items()
              if isinstance(result, BaseException)]
    if isinstance(again, ParseError) and failed:
        # The name may well be there: say why the bot could not look, which is what to fix first.
        again = again.model_copy(update={"message": again.message + " Also: " + "; ".join(failed[:3])})
    return again, hosts
