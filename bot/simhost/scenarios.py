"""Scenarios of the simulated engines: "healthy", "crash:<crash log id>" (a real log shipped in crashlogs/),
"crash:<category or alias>" (a shipped log of that category, for whichever engine runs), and "crash:port"
(the port really is taken when the engine binds it). Resolved here, once, into the self-contained scenario.json
the engines read at start.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

CRASHLOG_DIR = Path(__file__).parent / "crashlogs"

#: Short names for the categories of shared/corpus/TAXONOMY.md that tests and the demo use most.
ALIASES: dict[str, str] = {
    "oom": "gpu_oom_weights",
    "kv": "kv_cache_insufficient",
    "spec": "speculative_config_invalid",
    "arch": "unsupported_architecture",
    "graph": "cuda_graph_oom",
    "driver": "cuda_arch_or_driver",
    "files": "model_files_missing_or_corrupt",
}
ENGINES = ("sglang", "vllm")


@cache
def shipped_crashlogs() -> dict[str, dict]:
    """Crash log id -> record (engine, category, log, source), as copied from shared/corpus/crashlogs."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(CRASHLOG_DIR.glob("*.json"))}


def _entry(log_id: str, record: dict) -> dict:
    return {"id": log_id, "engine": record["engine"], "category": record["category"], "log": record["log"]}


def scenario_names() -> list[str]:
    logs = shipped_crashlogs()
    categories = sorted({r["category"] for r in logs.values()})
    return (
        ["healthy", "crash:port"]
        + [f"crash:{a}" for a in ALIASES]
        + [f"crash:{c}" for c in categories]
        + [f"crash:{i}" for i in logs]
    )


def resolve_scenario(scenario: str) -> dict:
    """The scenario.json content (without timings) for a scenario name; ValueError with the choices otherwise."""
    if scenario == "healthy":
        return {"name": scenario}
    if scenario == "crash:port":
        return {"name": scenario, "port_conflict": True}
    kind, _, what = scenario.partition(":")
    logs = shipped_crashlogs()
    if kind == "crash" and what in logs:
        return {"name": scenario, "crash": {"any": _entry(what, logs[what])}}
    category = ALIASES.get(what, what)
    if kind == "crash":
        matching = {i: r for i, r in logs.items() if r["category"] == category}
        if matching:
            crash: dict[str, dict] = {}
            for engine in ENGINES:
                own = [i for i, r in matching.items() if r["engine"] == engine]
                if own:
                    crash[engine] = _entry(own[0], matching[own[0]])
            first = next(iter(matching))
            crash["any"] = _entry(first, matching[first])
            return {"name": scenario, "crash": crash}
    raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(scenario_names())}")
