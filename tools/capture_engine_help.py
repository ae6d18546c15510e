"""Capture the real ``--help`` text and argument definitions of given SGLang / vLLM releases, on a CPU-only machine.

    python tools/capture_engine_help.py --sglang 0.5.9 0.5.11 0.5.23 --vllm 0.11.0 0.17.0 0.20.0 0.33.0 \
        --work /tmp/engine-venvs --out bot/simhost/enginehelp

For each release: a throwaway venv (Python 3.11) that sees one shared base venv (torch==2.13.0, the local CPU
wheel, and the pure-Python packages the parsers import) through a .pth file; the engine wheel with ``--no-deps``
and the transformers release it pins; then, through a sitecustomize that stubs GPU-only modules (tools/
engine_stubs.py) and answers device queries with an H100's figures (tools/engine_device.py):

* ``python -m sglang.launch_server --help`` / ``python -m vllm.entrypoints.openai.api_server --help`` (what the
  bot's probe runs on a host; vLLM's is grouped, so ``--help=all`` is kept too), stdout as printed, COLUMNS=80;
* tools/engine_actions.py: every option of the engine's own parser with its default, choices, nargs and type.

A module the engine imports that is missing and pure Python is installed into the base venv and the capture is
retried (the names are written down). When the engine cannot be imported at all, the argparse definitions are
read from the wheel's source instead (tools/engine_ast_flags.py) and the capture says so (method "source").
Writes <out>/<engine>-<version>.help.txt, .json (options and defaults), and appends to <out>/CAPTURES.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
TORCH = "torch==2.13.0"
#: Pure-Python packages the parsers import at module level (found by running the captures; see CAPTURES.md).
BASE_PACKAGES = (
    "numpy pydantic fastapi uvicorn requests psutil packaging orjson pyzmq msgspec aiohttp tqdm einops "
    "huggingface_hub safetensors pybase64 partial_json_parser prometheus-client setproctitle cloudpickle pyyaml "
    "regex blake3 cbor2 py-cpuinfo gguf typing_extensions sentencepiece pillow scipy python-multipart uvloop "
    "watchfiles interegular jinja2 protobuf openai tiktoken triton dill easydict cachetools diskcache "
    "prometheus-fastapi-instrumentator model-hosting-container-standards"
).split()
HELP_COMMAND = {
    "sglang": ["-m", "sglang.launch_server", "--help"],
    "vllm": ["-m", "vllm.entrypoints.openai.api_server", "--help"],
}
MISSING = re.compile(r"No module named '([A-Za-z0-9_]+)")
MARKER = "@@ACTIONS@@"


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


def pip(venv: Path, *args: str) -> None:
    done = run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args])
    if done.returncode:
        raise RuntimeError(f"pip install {' '.join(args)} failed:\n{done.stderr[-2000:]}")


def base_venv(work: Path) -> Path:
    base = work / "base"
    if not (base / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(base)], check=True)
        pip(base, TORCH)
        pip(base, *BASE_PACKAGES)
    return base


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3.*")) / "site-packages"


def pinned_transformers(wheel: Path) -> str:
    """The transformers requirement the engine's wheel states (it decides which config classes import)."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        for line in archive.read(meta).decode().splitlines():
            if line.startswith("Requires-Dist: transformers") and "extra ==" not in line:
                return line.removeprefix("Requires-Dist: ").split(";")[0].replace(" ", "")
    return "transformers"


def wheel_built(wheel: Path) -> dt.datetime:
    """When the wheel was built: the timestamp of its METADATA entry (a date the wheel itself carries)."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(i for i in archive.infolist() if i.filename.endswith(".dist-info/METADATA"))
    return dt.datetime(*meta.date_time, tzinfo=dt.timezone.utc)


#: How long after an engine's build its contemporaries are still taken: a host that installs the release in
#: its first week gets the transformers that was newest then.
ERA = dt.timedelta(days=7)


def modern_pip(work: Path) -> Path:
    """A venv with a current pip (the bundled one predates ``--uploaded-prior-to``); it installs into the
    engine venvs with ``--python``."""
    tool = work / "pip"
    if not (tool / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(tool)], check=True)
        pip(tool, "--upgrade", "pip>=25.1")
    return tool


def contemporary_transformers(work: Path, venv: Path, wheel: Path) -> str:
    """The transformers the engine's wheel pins, in the newest release uploaded before the engine's build + ERA:
    what a host installing that release then would have. A bare lower bound (vLLM 0.11.0: ``>=4.55.2``) would
    otherwise pull a transformers a year newer than the engine, whose config classes it was never run with
    (transformers 5 moved ``rope_scaling`` to ``rope_parameters``: vLLM 0.11.0 then says "rope_scaling should
    have a 'rope_type' key")."""
    spec = pinned_transformers(wheel)
    before = (wheel_built(wheel) + ERA).strftime("%Y-%m-%dT%H:%M:%SZ")
    wanted = f"{spec} uploaded before {before}"
    stamp = venv / "transformers-era.txt"
    if not stamp.exists() or stamp.read_text() != wanted:
        tool = modern_pip(work)
        # a newer transformers already there would satisfy a bare lower bound: take it out first
        run([str(tool / "bin" / "python"), "-m", "pip", "--python", str(venv / "bin" / "python"), "uninstall", "-y",
             "-q", "transformers"])
        # --isolated: the machine's extra local indexes and find-links carry no upload times, so their (newer)
        # files would pass the date filter; PyPI's own index says when each file was uploaded
        done = run([str(tool / "bin" / "python"), "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                    "-q", "--isolated", "--cert", os.environ.get("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt"),
                    "--uploaded-prior-to", before, spec])
        if done.returncode:
            raise RuntimeError(f"pip install {spec} (before {before}) failed:\n{done.stderr[-2000:]}")
        stamp.write_text(wanted)
    return wanted


def engine_venv(work: Path, base: Path, engine: str, version: str) -> tuple[Path, Path]:
    venv = work / f"{engine}-{version}"
    wheels = work / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"{engine}-{version}-*.whl"))
    if not found:
        done = run([str(base / "bin" / "python"), "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels),
                    f"{engine}=={version}"])
        if done.returncode:
            raise RuntimeError(f"{engine}=={version} could not be downloaded:\n{done.stderr[-1500:]}")
        found = sorted(wheels.glob(f"{engine}-{version}-*.whl"))
    wheel = found[0]
    if not (venv / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(venv)], check=True)
        (site_packages(venv) / "zz_base.pth").write_text(str(site_packages(base)) + "\n")
        pip(venv, "--no-deps", str(wheel))
    contemporary_transformers(work, venv, wheel)
    return venv, wheel


def sitecustomize(work: Path) -> Path:
    folder = work / "site"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(TOOLS)!r})\n"
        "import engine_device, engine_stubs\n"
        "engine_stubs.install_stubs()\n"
        "engine_device.patch_devices(engine_device.GPUS['80'])\n"
    )
    return folder


def in_venv(venv: Path, site: Path, args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "80", "VLLM_CONFIGURE_LOGGING": "1"}
    return run([str(venv / "bin" / "python"), *args], env=env, timeout=600, cwd=str(venv))


def with_missing_installed(base: Path, attempt, installed: list[str], tries: int = 12):
    """Run ``attempt``; while it fails on a missing module, install that module (pure Python) and retry."""
    for _ in range(tries):
        done = attempt()
        missing = MISSING.findall(done.stderr)
        if done.returncode == 0 or not missing:
            return done
        name = missing[-1]
        if name in installed:
            return done
        installed.append(name)
        pip(base, name.replace("_", "-"))
    return done


def capture(work: Path, out: Path, engine: str, version: str) -> dict:
    base = base_venv(work)
    venv, wheel = engine_venv(work, base, engine, version)
    site = sitecustomize(work)
    installed: list[str] = []
    helped = with_missing_installed(base, lambda: in_venv(venv, site, HELP_COMMAND[engine]), installed)
    record = {"engine": engine, "version": version, "wheel": wheel.name, "installed_on_the_way": installed}
    stem = out / f"{engine}-{version}"
    if helped.returncode == 0:
        Path(f"{stem}.help.txt").write_text(helped.stdout)
        if engine == "vllm":  # its plain --help lists groups; the options with their text are under --help=all
            full = in_venv(venv, site, HELP_COMMAND[engine][:-1] + ["--help=all"])
            if full.returncode == 0:
                Path(f"{stem}.help-all.txt").write_text(full.stdout)
        dumped = in_venv(venv, site, [str(TOOLS / "engine_actions.py"), engine])
        if dumped.returncode == 0 and MARKER in dumped.stdout:
            data = json.loads(dumped.stdout.split(MARKER, 1)[1])
            record |= {"method": "import", "stubbed": data["stubbed"], "actions": data["actions"]}
    if "method" not in record:
        from engine_ast_flags import actions_from_wheel  # fallback: the add_argument calls in the source

        record |= {"method": "source", "stubbed": [], "actions": actions_from_wheel(wheel, engine),
                   "import_error": (helped.stderr or "")[-800:]}
    Path(f"{stem}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sglang", nargs="*", default=[])
    ap.add_argument("--vllm", nargs="*", default=[])
    ap.add_argument("--work", type=Path, default=Path("/tmp/engine-venvs"))
    ap.add_argument("--out", type=Path, default=TOOLS.parent / "bot" / "simhost" / "enginehelp")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(TOOLS))
    rows = []
    for engine, versions in (("sglang", args.sglang), ("vllm", args.vllm)):
        for version in versions:
            record = capture(args.work, args.out, engine, version)
            rows.append(
                f"| {engine} | {version} | {record['wheel']} | {record['method']} | {len(record['actions'])} | "
                f"{', '.join(record['stubbed']) or '-'} | {', '.join(record['installed_on_the_way']) or '-'} | "
                f"{dt.date.today().isoformat()} |"
            )
            print(rows[-1], flush=True)
    with open(args.out / "CAPTURES.md", "a") as table:
        table.write("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
