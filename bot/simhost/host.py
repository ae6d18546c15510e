"""Build a simulated GPU host in a folder: the engine env (a python3 wrapper, fake sglang/vllm packages), a fake
nvidia-smi reading gpu_state.json, model folders, and the scenario the engines will play.

Everything the host needs lives under `root` and is referred to by absolute path, so a command run over SSH by a
non-login shell (no profile, bare PATH) behaves exactly like one run locally.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from bot.config import HostConfig
from bot.simhost.captures import install_capture
from bot.simhost.hfcache import write_hf_cache_model
from bot.simhost.hostlib.simengine import state as gpu_state
from bot.simhost.modelfiles import available_models, write_model_folder
from bot.simhost.presets import BASELINE_USED_MIB, CUDA_VERSION, DRIVER_VERSION, GPU_PRESETS
from bot.simhost.scenarios import resolve_scenario

HOSTLIB = Path(__file__).parent / "hostlib"
ENGINE_NAMES = ("sglang", "vllm")
VERSION_PATTERN = re.compile(r"^\d+(\.\d+){1,3}([.+-]?[A-Za-z0-9]+)*$")
DEFAULT_MODELS = ("Qwen3.6-27B", "Qwen3-32B", "Llama-3.1-8B-Instruct")
DEFAULT_ENGINES: Mapping[str, str] = MappingProxyType({"sglang": "0.5.10", "vllm": "0.17.1"})
FAKE_PID_BASE = 3_900_000  # pids for simulated foreign processes: above typical pid_max use, never signalled


@dataclass
class SimHost:
    root: Path
    python: Path  # root/ml-env/bin/python3, the engine env's interpreter
    models_dir: Path
    log_dir: Path
    bin_dir: Path  # holds nvidia-smi
    state_file: Path  # gpu_state.json
    gpus: str = "2xA6000"
    models: list[str] = field(default_factory=list)
    engines: dict[str, str] = field(default_factory=dict)

    @property
    def hf_home(self) -> Path:
        """HF_HOME of the host's engine env (its hub cache is hf_home/hub): ~/.cache/huggingface when root is
        the deploy user's home, and never the real user's cache otherwise."""
        return self.root / ".cache" / "huggingface"

    def add_model(self, name: str) -> Path:
        """Copy one more model folder onto the host (as a person would, while the bot runs)."""
        return write_model_folder(self.models_dir, name)

    def add_hf_model(self, repo_id: str, *, config: str | None = None, old_revisions: int = 0) -> Path:
        """A model in the hub cache (HF_HOME/hub/models--ORG--NAME/...); returns the snapshot refs/main names."""
        return write_hf_cache_model(self.hf_home / "hub", repo_id, config=config, old_revisions=old_revisions)

    @property
    def scenario_file(self) -> Path:
        return self.root / gpu_state.SCENARIO_FILE

    def _timings(self) -> dict:
        try:
            current = json.loads(self.scenario_file.read_text())
        except FileNotFoundError:
            current = {}
        return {k: current[k] for k in ("ready_after_s", "periodic_interval_s") if k in current}

    def set_scenario(
        self, scenario: str, *, ready_after_s: float | None = None, periodic_interval_s: float | None = None,
        heals_when_changed: Sequence[str] = (),
    ) -> None:
        """What the next engine started here does: "healthy" | "crash:<crash log id>" | "crash:<category or alias
        (oom, kv, spec, arch, graph, driver, files)>" | "crash:port". Engines already running are not affected.

        `heals_when_changed`: the crash depends on these flags, as a real one does on its command line: it repeats
        while a launch sets them as the first crashed launch did, and a launch that changes any of them starts."""
        content = resolve_scenario(scenario)  # raises ValueError before anything is written
        if heals_when_changed:
            if not all(flag.startswith("--") for flag in heals_when_changed):
                raise ValueError(f"heals_when_changed takes flags (--name), got {list(heals_when_changed)}")
            content["heals_when_changed"] = list(heals_when_changed)
        (self.root / "scenario_first_crash.json").unlink(missing_ok=True)
        timings = self._timings()
        for key, value in (("ready_after_s", ready_after_s), ("periodic_interval_s", periodic_interval_s)):
            if value is not None:
                if value < 0:
                    raise ValueError(f"{key} must be >= 0, got {value}")
                timings[key] = float(value)
        # replaced atomically: an engine starting right now reads the old scenario or the new one, never half
        tmp = self.scenario_file.with_name(f".{self.scenario_file.name}.tmp")
        tmp.write_text(json.dumps({**content, **timings}, indent=2) + "\n")
        os.replace(tmp, self.scenario_file)

    def set_gpu_processes(self, procs: Sequence[Mapping]) -> None:
        """Simulate other users' processes: each {"gpu": index (or "gpu_uuid"), "used_mib": int, "pid": int
        (optional), "name": str (optional), "utilization": percent (optional)}. Replaces earlier simulated
        processes; running simulated engines keep their entries."""
        state = json.loads(self.state_file.read_text())
        by_index = {g["index"]: g for g in state["gpus"]}
        by_uuid = {g["uuid"]: g for g in state["gpus"]}
        entries = []
        for n, proc in enumerate(procs):
            unknown = set(proc) - {"gpu", "gpu_index", "gpu_uuid", "used_mib", "pid", "name", "utilization"}
            if unknown:
                raise ValueError(f"process {n}: unknown keys {sorted(unknown)}")
            gpu = (
                by_uuid.get(proc["gpu_uuid"])
                if "gpu_uuid" in proc
                else by_index.get(proc.get("gpu", proc.get("gpu_index")))
            )
            if gpu is None:
                raise ValueError(f"process {n}: no such GPU on this host (GPUs {sorted(by_index)})")
            used = proc.get("used_mib")
            if not isinstance(used, int) or not 0 <= used <= gpu["memory_total_mib"]:
                raise ValueError(f"process {n}: used_mib must be an int between 0 and {gpu['memory_total_mib']}")
            entries.append(
                {
                    "pid": int(proc.get("pid", FAKE_PID_BASE + n)),
                    "gpu_index": gpu["index"],
                    "gpu_uuid": gpu["uuid"],
                    "used_mib": used,
                    "name": str(proc.get("name", "python3")),
                    "utilization": int(proc.get("utilization", 0)),
                }
            )
        with gpu_state.update_state(self.root) as current:
            current["processes"] = [p for p in current["processes"] if p.get("engine")] + entries

    def processes(self) -> list[int]:
        """Pids of live processes started through this host's interpreter wrapper (engines, probes), found by the
        DEPLOYBOT_SIMHOST=<root> the wrapper puts in their environment. Linux (/proc) only."""
        marker = f"DEPLOYBOT_SIMHOST={self.root}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:  # gone, or another user's process
                continue
            if marker in environ:
                pids.append(int(entry.name))
        return pids

    def terminate_processes(self, grace_s: float = 5.0) -> list[int]:
        """SIGTERM every process of this host, SIGKILL what is left after grace_s; returns the pids signalled.
        For test teardown and the end of `deploybot demo`, so that nothing outlives its simulated host."""
        pids = self.processes()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.05)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
        return pids

    def host_config(self, **overrides: object) -> dict:
        """An app.yaml host entry (transport local) for this folder; overrides win (e.g. transport="ssh", port,
        user, identity_file, known_hosts from the test sshd). Checked against HostConfig."""
        preset = GPU_PRESETS[self.gpus]
        entry: dict[str, object] = {
            "transport": "local",
            "address": "127.0.0.1",
            "python": str(self.python),
            "models_dir": str(self.models_dir),
            "log_dir": str(self.log_dir),
            "models": list(self.models),
            "gpus": f"{len(preset)}x {preset[0]['name']}",
            **overrides,
        }
        HostConfig.model_validate(entry)  # a clear pydantic error now rather than a confusing one at load time
        return entry


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting for its parent."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gpu_state(preset_name: str) -> dict:
    gpus = []
    for index, spec in enumerate(GPU_PRESETS[preset_name]):
        gpus.append(
            {
                "index": index,
                "name": spec["name"],
                "uuid": "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"deploybot-simhost/{preset_name}/{index}")),
                "memory_total_mib": spec["memory_total_mib"],
                "compute_cap": spec["compute_cap"],
                "pci_bus_id": f"00000000:{0x01 + index * 0x20:02X}:00.0",
                "p2p": spec["p2p"],
            }
        )
    return {
        "driver_version": DRIVER_VERSION,
        "cuda_version": CUDA_VERSION,
        "baseline_used_mib": BASELINE_USED_MIB,
        "gpus": gpus,
        "processes": [],
    }


def _write_executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _python_wrapper(root: Path, interpreter: str) -> str:
    q = shlex.quote
    return (
        "#!/bin/sh\n"
        "# The simulated host's engine interpreter: the real Python of whoever built this host, with the fake\n"
        "# engines first on the import path and the fake nvidia-smi first on PATH. Absolute paths only, so that\n"
        "# a non-login SSH shell (no profile, minimal environment) gets the same result.\n"
        f"DEPLOYBOT_SIMHOST={q(str(root))}\n"
        "export DEPLOYBOT_SIMHOST\n"
        f"PYTHONPATH={q(str(root / 'ml-env' / 'lib'))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONPATH\n"
        f"PATH={q(str(root / 'bin'))}:${{PATH:-/usr/local/bin:/usr/bin:/bin}}\n"
        "export PATH\n"
        f"HF_HOME={q(str(root / '.cache' / 'huggingface'))}\n"
        "export HF_HOME\n"
        f'exec {q(interpreter)} "$@"\n'
    )


def _validate(
    root: Path, gpus: str, models: Sequence[str], engines: Mapping[str, str], ready_after_s: float, interpreter: str
) -> None:
    if gpus not in GPU_PRESETS:
        raise ValueError(f"unknown GPU preset {gpus!r}; choose one of {sorted(GPU_PRESETS)}")
    known = available_models()
    unknown = [m for m in models if m not in known]
    if unknown:
        raise ValueError(f"no shipped config.json for {unknown}; models available: {known}")
    for name, version in engines.items():
        if name not in ENGINE_NAMES:
            raise ValueError(f"unknown engine {name!r}; choose from {ENGINE_NAMES}")
        if not VERSION_PATTERN.match(version):
            raise ValueError(f"engine {name}: {version!r} is not a version like 0.5.10")
    if ready_after_s < 0:
        raise ValueError(f"ready_after_s must be >= 0, got {ready_after_s}")
    if any(c.isspace() for c in interpreter) or any(c.isspace() for c in str(root)):
        # nvidia-smi is a script whose #! line names the interpreter; a #! line cannot hold spaces.
        raise ValueError(f"paths with whitespace cannot be used for a simulated host: {interpreter!r}, {str(root)!r}")


def build_sim_host(
    root: Path,
    *,
    gpus: str = "2xA6000",
    models: Sequence[str] = DEFAULT_MODELS,
    engines: Mapping[str, str] = DEFAULT_ENGINES,
    scenario: str = "healthy",
    ready_after_s: float = 1.0,
) -> SimHost:
    """Create (or refresh) a simulated host in `root`. All arguments are checked before anything is written."""
    root = Path(root).absolute()
    interpreter = os.path.abspath(sys.executable)  # not resolved: a venv's python must stay the venv's
    _validate(root, gpus, models, engines, ready_after_s, interpreter)
    resolve_scenario(scenario)

    env_bin, lib, bin_dir = root / "ml-env" / "bin", root / "ml-env" / "lib", root / "bin"
    models_dir, log_dir = root / "models", root / "deploybot-logs"
    for folder in (env_bin, lib, bin_dir, models_dir, log_dir):
        folder.mkdir(parents=True, exist_ok=True)

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("simengine", *engines):
        shutil.rmtree(lib / package, ignore_errors=True)
        shutil.copytree(HOSTLIB / package, lib / package, ignore=ignore)
        if package in engines:
            (lib / package / "version.py").write_text(f'__version__ = "{engines[package]}"\n')
            install_capture(package, engines[package], lib / package)  # the real release's flags and --help

    python = env_bin / "python3"
    _write_executable(python, _python_wrapper(root, interpreter))
    (env_bin / "python").unlink(missing_ok=True)
    (env_bin / "python").symlink_to("python3")
    if "vllm" in engines:
        _write_executable(
            env_bin / "vllm", f'#!/bin/sh\nexec {shlex.quote(str(python))} -m vllm.entrypoints.cli.main "$@"\n'
        )
    _write_executable(
        bin_dir / "nvidia-smi",
        f"#!{interpreter}\n"
        '"""Fake nvidia-smi of a deploybot simulated host (answers from ../gpu_state.json)."""\n'
        "import sys\n"
        "from pathlib import Path\n\n"
        'sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ml-env" / "lib"))\n'
        "from simengine.nvidia_smi import run  # noqa: E402\n\n"
        "sys.exit(run())\n",
    )

    state_file = root / gpu_state.STATE_FILE
    state_file.write_text(json.dumps(_gpu_state(gpus), indent=2) + "\n")
    for name in models:
        write_model_folder(models_dir, name)

    host = SimHost(
        root=root,
        python=python,
        models_dir=models_dir,
        log_dir=log_dir,
        bin_dir=bin_dir,
        state_file=state_file,
        gpus=gpus,
        models=list(models),
        engines=dict(engines),
    )
    host.set_scenario(scenario, ready_after_s=ready_after_s, periodic_interval_s=2.0)
    return host
