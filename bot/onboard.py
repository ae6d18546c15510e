"""`deploybot host add`: a new host onboarded in one command, or nothing written at all.

1. The host key is fetched and its SHA256 fingerprint shown; it is trusted only when it matches `--trust` (or the
   person says yes at the prompt). A mismatch refuses before anything else happens.
2. With that key alone (a scratch known_hosts), the bot logs in and runs the discover agent on the system python3:
   the engine environments (interpreters with sglang or vllm) and the models folders.
3. It probes the host with the chosen interpreter (GPUs, models, engines), as every deployment will.
4. Only then: the key is appended to known_hosts, the host is added to app.yaml (comments kept) and the probe's
   view is stored. Any failure before this step leaves known_hosts, app.yaml and the store as they were.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.appyaml import with_host, write_atomically
from bot.config import HOST_NAME_PATTERN, ConfigError, HostConfig
from bot.hostkey import HostKey, HostKeyMismatch, check_against_known, fetch_host_key, normalise_fingerprint
from bot.hostkey import record as record_key
from bot.hostkey import scratch_known_hosts
from bot.hostview import HostView
from bot.probe import ProbeFailed, probe, run_agent
from bot.remote import SshRemote
from bot.store import Store
from planners.engines import registry

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
_TARGET = re.compile(r"^(?:(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]*)@)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9.-]+))"
                     r"(?::(?P<port>\d{1,5}))?$")


class OnboardError(Exception):
    """Onboarding stopped; nothing was written. The message says what to do next."""


@dataclass(frozen=True)
class Target:
    address: str
    port: int = 22
    user: str | None = None


def parse_target(text: str) -> Target:
    """`[USER@]ADDRESS[:PORT]`, an IPv6 address in brackets (`root@[fd00::5]:2222`)."""
    match = _TARGET.match(text.strip())
    port = int(match.group("port")) if match and match.group("port") else 22
    if not match or not 1 <= port <= 65535:
        raise OnboardError(f"{text!r} is not [USER@]ADDRESS[:PORT] (for example ops@10.0.0.12:22 or gpu-7.lab)")
    return Target(address=match.group("v6") or match.group("host"), port=port, user=match.group("user"))


@dataclass
class Onboarded:
    name: str
    host_key: HostKey
    entry: dict[str, Any]
    envs: list[dict[str, Any]]
    models_dirs: list[dict[str, Any]]
    view: HostView
    key_was_known: bool
    notes: list[str] = field(default_factory=list)


def _path_as_given(path: str) -> str:
    """Paths of THIS machine written to app.yaml: `~/...` kept, a relative one made absolute (cwd may change)."""
    return path if path.startswith("~") else os.path.abspath(path)


def choose_env(envs: list[dict[str, Any]], python: str | None) -> dict[str, Any]:
    if python:
        chosen = [e for e in envs if python in (e["python"], e["path"])]
        if chosen:
            return chosen[0]
        return {"python": python, "path": python, "engines": {}}
    if not envs:
        raise OnboardError(f"no interpreter with {' or '.join(registry.names())} was found on the host (searched the home folder's "
                           "envs, conda envs, /opt/*, the system python3); install an engine there, or name its "
                           "interpreter with --python PATH")
    # The most engines first, then the registry's first engine; among equals the first found (the home folder's).
    preferred = registry.names()[0]  # the planner's first choice when several are installed
    return max(envs, key=lambda e: (len(e["engines"]), preferred in e["engines"]))


def choose_models_dirs(found: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """models_dir: the first usual folder holding models (else the first that exists, else ~/models); the other
    folders holding models become extra_models_dirs. The hub cache needs no entry: the probe always reads it."""
    plain = [d for d in found if not d["hf_cache"]]
    with_models = [d for d in plain if d["models"]]
    first = (with_models or plain or [{"dir": "~/models"}])[0]["dir"]
    return first, [d["dir"] for d in with_models if d["dir"] != first]


async def _decide_trust(host_key: HostKey, known: Path, trust: str | None,
                        confirm: Callable[[HostKey], Awaitable[bool]] | None) -> bool:
    """True when known_hosts already holds the key. Raises (nothing written) unless the key is trusted."""
    if trust is not None and normalise_fingerprint(trust) != host_key.fingerprint:
        raise HostKeyMismatch(
            f"the host presents {host_key.fingerprint}, not the {normalise_fingerprint(trust)} you said to trust. "
            f"Refusing: nothing was written. Check the fingerprint on the host (ssh-keygen -lf "
            f"/etc/ssh/ssh_host_{host_key.algorithm.removeprefix('ssh-')}_key.pub) and whether the address is right."
        )
    if check_against_known(known, host_key):
        return True
    if trust is None:
        if confirm is None:
            raise OnboardError(
                f"the host key ({host_key.fingerprint}) is not trusted yet and there is no terminal to ask at. "
                f"Compare it with `ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` on the host, then run again "
                f"with --trust {host_key.fingerprint}"
            )
        if not await confirm(host_key):
            raise OnboardError("the host key was not accepted; nothing was written")
    return False


async def onboard(
    name: str, target: Target, *, config_path: Path, store: Store, known_hosts: str | None = None,
    identity_file: str | None = None, trust: str | None = None, python: str | None = None,
    confirm: Callable[[HostKey], Awaitable[bool]] | None = None, say: Callable[[str], None] = print,
) -> Onboarded:
    if not re.match(HOST_NAME_PATTERN, name):
        raise OnboardError(f"host name {name!r} must match {HOST_NAME_PATTERN} (letters, digits, . _ -)")
    with_host(config_path, name, {"models_dir": "~/models", "transport": "local"})  # refuses early: bad file, name taken
    known_path = known_hosts or DEFAULT_KNOWN_HOSTS
    known = Path(os.path.expanduser(known_path))
    host_key = await fetch_host_key(target.address, target.port)
    say(f"{target.address}:{target.port} presents a {host_key.algorithm} key: {host_key.fingerprint}")
    key_was_known = await _decide_trust(host_key, known, trust, confirm)
    scratch = scratch_known_hosts(host_key)
    entry: dict[str, Any] = {"address": target.address, "port": target.port}
    if target.user:
        entry["user"] = target.user
    if identity_file:
        entry["identity_file"] = _path_as_given(identity_file)
    entry["known_hosts"] = _path_as_given(known_path)
    try:
        login = HostConfig.model_validate({**entry, "known_hosts": str(scratch), "python": "python3", "models_dir": "~"})
        remote = SshRemote(name, login, connect_attempts=2)
        try:
            # The system python3 looks around; an interpreter named with --python does, when there is none.
            found = await run_agent(remote, python or "python3", "discover_agent", {}, timeout=180)
            env = choose_env(found.get("envs", []), python)
            models_dir, extra = choose_models_dirs(found.get("models_dirs", []))
            entry.update(python=env["python"], models_dir=models_dir)
            if extra:
                entry["extra_models_dirs"] = extra
            facts = await probe(remote, name, login.model_copy(update={"python": env["python"],
                                                                       "models_dir": models_dir,
                                                                       "extra_models_dirs": extra}))
        finally:
            await remote.close()
    except ProbeFailed as exc:
        raise OnboardError(f"{exc}; nothing was written. The host needs a python3 on its PATH for discovery, "
                           f"or name the engine interpreter with --python PATH") from None
    finally:
        scratch.unlink(missing_ok=True)
    view = HostView.from_facts(facts, python=env["python"])
    if view.gpu_description():
        entry["gpus"] = view.gpu_description()
    text, _ = with_host(config_path, name, entry)
    # Everything checked: now write, key first (app.yaml's host is useless without it).
    if not key_was_known:
        record_key(known, host_key)
    write_atomically(config_path, text)
    await store.save_host_view(view)
    notes = [f"other engine environments: {', '.join(e['python'] for e in found['envs'] if e is not env)}"] \
        if len(found.get("envs", [])) > 1 else []
    return Onboarded(name, host_key, entry, found.get("envs", []), found.get("models_dirs", []), view,
                     key_was_known, notes)


def summary(done: Onboarded) -> str:
    view = done.view
    lines = [
        f"{done.name} added: {done.entry.get('user', '') + '@' if done.entry.get('user') else ''}"
        f"{done.entry['address']}:{done.entry['port']}",
        f"  host key: {done.host_key.fingerprint}" + (" (already in known_hosts)" if done.key_was_known
                                                       else f" (recorded in {done.entry['known_hosts']})"),
        f"  GPUs:     {view.gpu_text()}",
        f"  python:   {done.entry['python']} ({view.engine_text()})",
        f"  models:   {view.model_text()}",
        f"  folders:  {', '.join([done.entry['models_dir'], *done.entry.get('extra_models_dirs', [])])}"
        + " and the Hugging Face cache",
        *(f"  {note}" for note in done.notes),
        f'Try: deploybot ask "start {view.models[0] if view.models else "MODEL"} on {done.name}"',
    ]
    return "\n".join(lines)


def entry_json(done: Onboarded) -> str:
    return json.dumps({"name": done.name, "entry": done.entry, "fingerprint": done.host_key.fingerprint,
                       "envs": done.envs, "models_dirs": done.models_dirs, "view": view_json(done.view)}, indent=2)


def view_json(view: HostView) -> dict[str, Any]:
    return json.loads(view.model_dump_json())


__all__ = ["ConfigError", "OnboardError", "Onboarded", "Target", "onboard", "parse_target", "summary"]
