"""Probe a host in ONE round trip: the probe agent is sent to the host's engine python, which prints JSON."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from pydantic import ValidationError

from bot.config import HostConfig
from bot.models import HostFacts
from bot.remote import Remote, RemoteError
from planners.engines import registry

AGENTS = Path(__file__).parent / "agents"


class ProbeFailed(RemoteError):
    """The probe ran but could not answer; the message says why."""


#: Helper modules sent in front of an agent (after common.py), so that each still travels as one script.
AGENT_HELPERS: dict[str, tuple[str, ...]] = {
    "probe_agent": ("modelfind", "gpus"),
    "discover_agent": ("modelfind",),
}


@cache
def agent_source(name: str) -> str:
    """The script sent to the host: agents/common.py, its helpers, then the agent itself (one self-contained text)."""
    parts = ["common", *AGENT_HELPERS.get(name, ()), name]
    return "\n\n".join((AGENTS / f"{part}.py").read_text() for part in parts)


async def run_agent(remote: Remote, python: str, name: str, args: dict, *, timeout: float = 120,
                    site: bool = True) -> dict:
    """Run one of bot/agents/*.py on the host with its python, the script on stdin, args as one JSON argv value.

    `site=False` (`python -S`) for an agent that needs the standard library alone: an engine's environment has many
    packages and `.pth` files, and reading them at start-up measured 60-140 ms of the agent's run on the simulated
    host's venv (`python -c pass` 0.08-0.21 s, with -S 0.02-0.07 s)."""
    args = {**args, "engines": registry.probe_spec()}  # the agents know no engine themselves
    argv = [python, *([] if site else ["-S"]), "-", json.dumps(args)]
    result = await remote.run(argv, input=agent_source(name), timeout=timeout)
    if result.exit_status == 127:
        raise ProbeFailed(f"{remote.host}: the engine python {python} was not found on the host (check `python:` in app.yaml)")
    if result.exit_status != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise ProbeFailed(f"{remote.host}: {name} exited {result.exit_status}: " + " | ".join(tail))
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError:
        raise ProbeFailed(f"{remote.host}: {name} printed no JSON: {result.stdout[:300]!r}") from None


def drafter_args(config: HostConfig, model: str | None, draft_model: str | None, drafters: bool) -> dict | None:
    """What the probe agent reads as drafter folders: the one named, and app.yaml's drafters of the model (names,
    or absolute paths outside the models folder); None when no drafter is wanted."""
    if not (drafters or draft_model):
        return None
    listed = config.drafters.get(model or "", [])
    return {
        "names": [n for n in [draft_model, *listed] if n and not n.startswith("/")],
        "paths": [p for p in listed if p.startswith("/")],
    }


async def probe(
    remote: Remote,
    host: str,
    config: HostConfig,
    *,
    model: str | None = None,
    engine_help: list[str] | None = None,
    draft_model: str | None = None,
    drafters: bool = False,
) -> HostFacts:
    """One round trip. ``drafters``: also read the drafter folders a speculative plan may use (the one named in
    ``draft_model``, app.yaml's ``drafters:`` of ``model``, and every DFlash / EAGLE-3 folder)."""
    args = {"models_dir": config.models_dir, "extra_models_dirs": list(config.extra_models_dirs), "model": model,
            "engine_help": engine_help or []}
    wanted = drafter_args(config, model, draft_model, drafters)
    if wanted:
        args["drafters"] = wanted
    raw = await run_agent(remote, config.python, "probe_agent", args, timeout=300 if engine_help else 60)
    raw.pop("probe_seconds", None)
    try:
        return HostFacts.model_validate({"host": host, **raw})
    except ValidationError as exc:
        raise ProbeFailed(f"{host}: the probe's answer did not validate: {exc}") from None


async def fetch_engine_help(remote: Remote, config: HostConfig, engines: list[str]) -> dict[str, str]:
    """Each engine's `--help` text (to validate flags before launch); slow, so callers cache it per version."""
    raw = await run_agent(remote, config.python, "probe_agent", {"help_only": engines}, timeout=300)
    return {name: text for name, text in raw.get("engine_help", {}).items() if isinstance(text, str)}
