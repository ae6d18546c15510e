"""The simulated host's GPU state: <root>/gpu_state.json, shared by nvidia-smi and the running fake engines.

Every change is a read-modify-write under an exclusive fcntl lock on a separate lock file, and the JSON is
replaced atomically, so a reader never sees half a file and two engines starting together never lose an entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

STATE_FILE = "gpu_state.json"
SCENARIO_FILE = "scenario.json"


def sim_root() -> Path:
    """The simulated host folder: $DEPLOYBOT_SIMHOST (set by the ml-env wrapper), else found from this file's place
    (<root>/ml-env/lib/simengine/state.py), so `nvidia-smi` works even from a shell that set nothing."""
    env = os.environ.get("DEPLOYBOT_SIMHOST")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3]


@contextlib.contextmanager
def _locked(root: Path, exclusive: bool) -> Iterator[None]:
    with open(root / (STATE_FILE + ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(root: Path) -> dict:
    return json.loads((root / STATE_FILE).read_text())


def _write(root: Path, state: dict) -> None:
    tmp = root / f".{STATE_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, root / STATE_FILE)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def read_state(root: Path | None = None) -> dict:
    """The state as nvidia-smi sees it: processes of engines that died without cleaning up (SIGKILL) are gone,
    as the driver frees a dead process's memory."""
    root = root or sim_root()
    with _locked(root, exclusive=False):
        state = _read(root)
    state["processes"] = [p for p in state.get("processes", []) if not p.get("engine") or _alive(int(p["pid"]))]
    return state


@contextlib.contextmanager
def update_state(root: Path | None = None) -> Iterator[dict]:
    """Read-modify-write: mutate the yielded dict; it is written back when the block ends without error."""
    root = root or sim_root()
    with _locked(root, exclusive=True):
        state = _read(root)
        yield state
        _write(root, state)


def register_engine(
    pid: int, gpu_indices: list[int], used_mib: int, process_name: str, root: Path | None = None
) -> None:
    """Record (or update) this engine process's memory on each of its GPUs."""
    with update_state(root) as state:
        by_index = {g["index"]: g for g in state["gpus"]}
        kept = [p for p in state.get("processes", []) if int(p["pid"]) != pid]
        for index in gpu_indices:
            gpu = by_index[index]
            kept.append(
                {
                    "pid": pid,
                    "gpu_index": index,
                    "gpu_uuid": gpu["uuid"],
                    "used_mib": int(used_mib),
                    "name": process_name,
                    "engine": True,
                }
            )
        state["processes"] = kept


def unregister_engine(pid: int, root: Path | None = None) -> None:
    with update_state(root) as state:
        state["processes"] = [p for p in state.get("processes", []) if int(p["pid"]) != pid]


def used_mib_by_others(state: dict, gpu_index: int, own_pid: int) -> int:
    """Memory other processes hold on a GPU, plus the driver's baseline."""
    others = sum(
        int(p["used_mib"]) for p in state["processes"] if p["gpu_index"] == gpu_index and int(p["pid"]) != own_pid
    )
    return others + int(state.get("baseline_used_mib", 0))


def read_scenario(root: Path | None = None) -> dict:
    root = root or sim_root()
    try:
        return json.loads((root / SCENARIO_FILE).read_text())
    except FileNotFoundError:
        return {"name": "healthy"}
