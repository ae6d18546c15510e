"""The discover agent (`deploybot host add`): which engine environments and models folders a new host has.

Sent on stdin to the host's system python3 after common.py and modelfind.py; prints one JSON object:
- "envs": each interpreter found whose packages include sglang or vllm, with their versions. Searched: the
  virtual envs in the home folder (~/*/bin/python3), conda / mamba envs (~/miniconda3/envs/*/bin/python and the
  other usual roots, /opt/conda/envs/*), /opt/*/bin/python3, and the system python3. Each candidate is asked
  (in parallel, on the host) by running it on a short snippet that reads package metadata, or a source checkout's
  version.py, without importing the engine (importing vllm takes seconds).
- "models_dirs": the usual models folders that exist (~/models, /models, /data/models, /mnt/models,
  /opt/models) and the Hugging Face hub cache, each with the models found there.
Standard library only.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

if "find_models" not in globals():  # run on its own rather than sent after modelfind.py
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from modelfind import _scan, hf_hub_dirs  # noqa: E402

ENV_PATTERNS = [
    "~/*/bin/python3",
    "~/.venv*/bin/python3",
    "~/.virtualenvs/*/bin/python3",
    "~/miniconda3/envs/*/bin/python", "~/anaconda3/envs/*/bin/python", "~/miniforge3/envs/*/bin/python",
    "~/mambaforge/envs/*/bin/python", "~/micromamba/envs/*/bin/python", "~/.conda/envs/*/bin/python",
    "~/miniconda3/bin/python", "~/anaconda3/bin/python", "~/miniforge3/bin/python",
    "/opt/conda/envs/*/bin/python", "/opt/*/bin/python3",
]
MODELS_DIRS = ["~/models", "/models", "/data/models", "/mnt/models", "/opt/models"]

ENGINE_CHECK = r"""
import importlib.util, json, os, re, sys
from importlib import metadata
out = {"python_version": sys.version.split()[0], "engines": {}}
for name in json.loads(sys.argv[1]):
    try:
        out["engines"][name] = metadata.version(name)
        continue
    except Exception:
        pass
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        continue
    folder = list(spec.submodule_search_locations)[0]
    version = "unknown"
    for candidate in ("version.py", "_version.py", "__init__.py"):
        try:
            text = open(os.path.join(folder, candidate)).read()
        except OSError:
            continue
        match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", text)
        if match:
            version = match.group(1)
            break
    out["engines"][name] = version
print(json.dumps(out))
"""


def candidates():
    found = []
    for pattern in ENV_PATTERNS:
        for path in sorted(glob.glob(os.path.expanduser(pattern))):
            if os.access(path, os.X_OK) and path not in found:
                found.append(path)
    system = shutil.which("python3") or "/usr/bin/python3"
    if os.access(system, os.X_OK) and system not in found:
        found.append(system)
    return found


#: The engines' Python packages, as the bot sends them (planners/engines/registry.py probe_spec); these defaults are
#: what it sends today, for running the agent by hand.
PACKAGES = ["sglang", "vllm"]


def check(python):
    try:
        done = subprocess.run([python, "-c", ENGINE_CHECK, json.dumps(PACKAGES)], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except Exception:  # noqa: BLE001 - a broken env is just not an engine env
        return None
    if not answer or not answer.get("engines"):
        return None
    home = os.path.expanduser("~")
    shown = "~" + python[len(home):] if python.startswith(home + "/") else python
    return {"python": shown, "path": python, "python_version": answer.get("python_version"),
            "engines": answer["engines"]}


def models_dirs():
    out = []
    home = os.path.expanduser("~")
    for folder in MODELS_DIRS + hf_hub_dirs():
        path = os.path.abspath(os.path.expanduser(folder))
        if not os.path.isdir(path) or any(d["path"] == path for d in out):
            continue
        shown = "~" + path[len(home):] if path.startswith(home + "/") else path
        out.append({"dir": shown, "path": path, "hf_cache": path in hf_hub_dirs(),
                    "models": [m["name"] for m in _scan(path)]})
    return out


def main():
    global PACKAGES  # noqa: PLW0603 - the bot's list replaces the defaults for this run
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    PACKAGES = [e["package"] for e in args.get("engines") or []] or PACKAGES
    pythons = candidates()
    with ThreadPoolExecutor(max_workers=8) as pool:
        envs = [e for e in pool.map(check, pythons) if e]
    facts = {"hostname": os.uname().nodename, "home": os.path.expanduser("~"), "searched": pythons,
             "envs": envs, "models_dirs": models_dirs(), "nvidia_smi": shutil.which("nvidia-smi")}
    sys.stdout.write(json.dumps(facts))


if __name__ == "__main__":
    main()
