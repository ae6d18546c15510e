"""The probe agent: sent to the host's engine python on stdin, run once, prints one JSON object.

Self-contained on purpose (standard library, plus pynvml when the host has it): the host has only its engine env.
Usage on the host: `python3 - '{"models_dir": "...", "model": "..."}' < common.py+modelfind.py+probe_agent.py`.

It answers, in one round trip: GPUs (NVML, else `nvidia-smi` CSV), processes on the GPUs with their command lines
(recognising running sglang/vllm servers), listening TCP ports, the model folder (config.json, safetensors index
total size, shard bytes), the models folder listing, installed engines and versions (from package metadata, without
importing them: importing vllm takes many seconds), disk free, RAM, driver and CUDA versions, P2P between GPUs.
"""

import json
import os
import pwd
import shutil
import subprocess
import sys
import time

if "find_models" not in globals():  # run on its own (by hand, in a checkout) rather than sent after its helpers
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpus import _int_or_none, gpus  # noqa: E402
    from modelfind import find_models, locate  # noqa: E402

def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    except OSError:
        return []


def _user_and_start(pid):
    try:
        uid = os.stat("/proc/%d" % pid).st_uid
        user = pwd.getpwuid(uid).pw_name
    except (OSError, KeyError):
        user = None
    try:
        started = os.stat("/proc/%d" % pid).st_mtime
    except OSError:
        started = None
    return user, started


def _flag(argv, *names):
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


#: The engines the bot knows, as it sends them (planners/engines/registry.py probe_spec): each one's package, the argv
#: that prints its --help, the words of its servers' command lines and its spellings of model / port / TP. These
#: defaults are what the bot sends today, for running the agent by hand.
ENGINES = [
    {"name": "sglang", "package": "sglang", "help": ["-m", "sglang.launch_server", "--help"],
     "marks": ["sglang.launch_server", "sglang serve"],
     "flags": {"model": ["--model-path"], "port": ["--port"], "tp": ["--tp-size", "--tensor-parallel-size", "--tp"]}},
    {"name": "vllm", "package": "vllm", "help": ["-m", "vllm.entrypoints.openai.api_server", "--help"],
     "marks": ["vllm.entrypoints", "vllm serve"],
     "flags": {"model": ["--model"], "port": ["--port"], "tp": ["--tensor-parallel-size", "-tp"]}},
]


def recognise_server(argv):
    """A running server of one of the engines, from its command line."""
    joined = " ".join(argv)
    engine = next((e for e in ENGINES if any(mark in joined for mark in e["marks"])), None)
    if engine is None:
        return None
    flags = engine.get("flags", {})
    model = _flag(argv, *flags.get("model", []))
    if model is None and "serve" in argv:
        after = argv[argv.index("serve") + 1:]
        model = after[0] if after and not after[0].startswith("-") else None
    port = _int_or_none(_flag(argv, *flags.get("port", [])))
    tp = _int_or_none(_flag(argv, *flags.get("tp", [])))
    return {"engine": engine["name"], "model_path": model, "port": port, "tp": tp}


def enrich_processes(processes):
    for proc in processes:
        argv = _cmdline(proc["pid"])
        if argv:
            proc["cmdline"] = " ".join(argv)[:2000]
            proc["server"] = recognise_server(argv)
            proc.setdefault("name", os.path.basename(argv[0]))
        proc["user"], proc["started_at"] = _user_and_start(proc["pid"])
    return processes


def listening_ports():
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                next(handle)
                for line in handle:
                    fields = line.split()
                    if len(fields) > 3 and fields[3] == "0A":  # TCP_LISTEN
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return sorted(ports)


def model_folder(found, models_dir, name):
    """The asked-for model's folder (a plain folder, or a hub cache snapshot) with what the planner reads."""
    location = locate(found, name)
    path = location["path"] if location else os.path.join(models_dir, name)
    folder = {"name": name, "path": path, "exists": os.path.isdir(path)}
    if location and location.get("source") == "hf_cache":
        folder.update(source="hf_cache", repo=location.get("repo"), revision=location.get("revision"))
    if not folder["exists"]:
        return folder
    try:
        with open(os.path.join(path, "config.json")) as handle:
            folder["config"] = json.load(handle)
    except (OSError, ValueError) as exc:
        folder["config_error"] = "%s: %s" % (type(exc).__name__, exc)
    try:
        with open(os.path.join(path, "model.safetensors.index.json")) as handle:
            total = json.load(handle).get("metadata", {}).get("total_size")
            # A vendored index can be a stub with total_size 0: not a size.
            folder["index_total_size"] = int(total) if total else None
    except (OSError, ValueError):
        pass
    shard_bytes = 0
    shard_count = 0
    custom_code = False
    for entry in os.scandir(path):
        if entry.name.endswith(".safetensors"):
            shard_bytes += entry.stat().st_size  # follows a hub snapshot's symlink to its blob
            shard_count += 1
        elif entry.name.endswith(".py"):
            custom_code = True
    folder.update(shard_bytes=shard_bytes, shard_count=shard_count, has_custom_code=custom_code)
    return folder


def _is_dedicated_drafter(config):
    """A DFlash drafter or an EAGLE-3 head, by its config (the planner's planners/drafters.py says why)."""
    archs = [a.lower() for a in config.get("architectures") or [] if isinstance(a, str)]
    return isinstance(config.get("dflash_config"), dict) or any("dflash" in a or "eagle3" in a for a in archs)


def _config_of(location):
    try:
        with open(os.path.join(location["path"], "config.json")) as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def dedicated_drafters(found):
    """Names of the folders that only draft for another model (never served themselves): the parser leaves them out
    of what a loose model name can mean. One small JSON read per folder."""
    return sorted(name for name, location in found.items() if _is_dedicated_drafter(_config_of(location) or {}))


def drafter_folders(found, models_dir, wanted):
    """Folders read fully as drafter candidates: the one named, those app.yaml lists (names or absolute paths), and
    every folder whose config.json is a dedicated drafter's. One small JSON read per folder."""
    named = set(wanted.get("names") or [])
    out = []
    for path in wanted.get("paths") or []:
        name = os.path.basename(path.rstrip("/"))
        out.append(model_folder({name: {"name": name, "path": path}}, models_dir, name))
    for name in sorted(found):
        if name in named:
            out.append(model_folder(found, models_dir, name))
            continue
        if _is_dedicated_drafter(_config_of(found[name]) or {}):
            out.append(model_folder(found, models_dir, name))
    return out


def _source_version(name):
    """Version of a package present without install metadata (a source checkout on PYTHONPATH), read from its
    source text: importing the engine would take seconds (vllm imports torch)."""
    import importlib.util  # noqa: PLC0415
    import re  # noqa: PLC0415

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = list(spec.submodule_search_locations)[0]
    for candidate in ("version.py", "_version.py", "__init__.py"):
        try:
            with open(os.path.join(folder, candidate)) as handle:
                match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", handle.read())
        except OSError:
            continue
        if match:
            return match.group(1)
    return "unknown"


def engines():
    from importlib import metadata  # noqa: PLC0415

    found = {}
    for engine in ENGINES:
        name, package = engine["name"], engine["package"]
        try:
            found[name] = {"name": name, "version": metadata.version(package)}
        except metadata.PackageNotFoundError:
            try:
                version = _source_version(package)
            except Exception as exc:  # noqa: BLE001
                found[name] = {"name": name, "error": str(exc)[:300]}
                continue
            if version is not None:
                found[name] = {"name": name, "version": version}
        except Exception as exc:  # noqa: BLE001
            found[name] = {"name": name, "error": str(exc)[:300]}
    return found


def engine_help(names):
    helps = {}
    commands = {e["name"]: e["help"] for e in ENGINES}
    for name in names:
        if name not in commands:
            continue
        try:
            done = subprocess.run([sys.executable, *commands[name]], capture_output=True, text=True,
                                  timeout=120, check=False)
            helps[name] = done.stdout[-200000:]
        except Exception as exc:  # noqa: BLE001
            helps[name] = ""
            sys.stderr.write("help of %s failed: %s\n" % (name, exc))
    return helps


def memory():
    info = {}
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                key, value = line.split(":", 1)
                if key in ("MemTotal", "MemAvailable"):
                    info[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return info.get("MemTotal"), info.get("MemAvailable")


def main():
    global ENGINES  # noqa: PLW0603 - the bot's list replaces the defaults for this run
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    ENGINES = args.get("engines") or ENGINES
    if args.get("help_only"):
        # Once per engine version: `--help` imports the engine (slow), so its answer is cached by the bot.
        sys.stdout.write(json.dumps({"engine_help": engine_help(args["help_only"])}))
        return
    models_dir = os.path.expanduser(args.get("models_dir") or "~")
    facts = {"hostname": os.uname().nodename, "home": os.path.expanduser("~"),
             "python_version": sys.version.split()[0]}
    facts.update(gpus())
    enrich_processes(facts["gpu_processes"])
    facts["listening_ports"] = listening_ports()
    found = find_models([models_dir] + list(args.get("extra_models_dirs") or []))
    facts["models_available"] = sorted(found)
    facts["model_locations"] = [found[name] for name in sorted(found)]
    if args.get("model"):
        facts["model"] = model_folder(found, models_dir, args["model"])
    if args.get("drafters"):
        facts["drafters"] = drafter_folders(found, models_dir, args["drafters"])
    facts["drafter_names"] = dedicated_drafters(found)
    facts["engines"] = engines()
    if args.get("engine_help"):
        facts["engine_help"] = engine_help(args["engine_help"])
    try:
        facts["disk_free_bytes"] = shutil.disk_usage(models_dir if os.path.isdir(models_dir) else "/").free
    except OSError:
        pass
    facts["ram_total_bytes"], facts["ram_available_bytes"] = memory()
    facts["probe_seconds"] = round(time.time() - START, 3)
    sys.stdout.write(json.dumps(facts))


START = time.time()

if __name__ == "__main__":
    main()
