"""The backends by the `kind` app.yaml names them with (`hosts.NAME.backend`), and one backend per host.

Adding a backend is one line in `BACKENDS` (plus its module, and its settings in bot/config.py if it has any).
"""

from __future__ import annotations

from collections.abc import Callable

from bot.backends.base import Backend
from bot.backends.multinode import MultiNodeBackend
from bot.backends.process import ProcessBackend
from bot.backends.slurm import SlurmBackend
from bot.config import HostConfig
from bot.remote import RemotePool

#: How to make a host's backend: (host name, its app.yaml entry, the pool of SSH/local transports).
BackendFactory = Callable[[str, HostConfig, RemotePool], Backend]

BACKENDS: dict[str, BackendFactory] = {
    "process": lambda host, config, remotes: ProcessBackend(host, config, remotes.get(host)),
    "slurm": lambda host, config, remotes: SlurmBackend(host, config, remotes.get(host)),
    "multinode": lambda host, config, remotes: MultiNodeBackend(host, config, remotes),
}


class BackendPool:
    """One backend per host name, made on first use from the host's `backend:` (its `kind` picks the factory)."""

    def __init__(self, hosts: dict[str, HostConfig], remotes: RemotePool,
                 factories: dict[str, BackendFactory] | None = None) -> None:
        self._hosts = hosts
        self._remotes = remotes
        self._factories = BACKENDS if factories is None else factories
        self._backends: dict[str, Backend] = {}

    def get(self, host: str) -> Backend:
        if host not in self._backends:
            config = self._hosts[host]
            kind = config.backend.kind
            if kind not in self._factories:
                raise KeyError(f"{host}: no backend named {kind!r} (known: {', '.join(sorted(self._factories))})")
            self._backends[host] = self._factories[kind](host, config, self._remotes)
        return self._backends[host]
