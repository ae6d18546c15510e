"""A fake `nvidia-smi` that answers from <root>/gpu_state.json the way the real one answers a probe.

Supported: `--query-gpu=FIELDS` and `--query-compute-apps=FIELDS` with `--format=csv[,noheader][,nounits]`
(any subset and order of the fields below), `-i/--id`, `-L`, `topo -p2p r`, and plain `nvidia-smi` (the table).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from simengine.state import read_state

Getter = Callable[[dict, dict], str]

# field -> (header, unit, getter(gpu, state)); aliases are the ones nvidia-smi itself accepts.
GPU_FIELDS: dict[str, tuple[str, str | None, Getter]] = {
    "index": ("index", None, lambda g, s: str(g["index"])),
    "name": ("name", None, lambda g, s: g["name"]),
    "uuid": ("uuid", None, lambda g, s: g["uuid"]),
    "count": ("count", None, lambda g, s: str(len(s["gpus"]))),
    "memory.total": ("memory.total [MiB]", "MiB", lambda g, s: str(g["memory_total_mib"])),
    "memory.used": ("memory.used [MiB]", "MiB", lambda g, s: str(_used(g, s))),
    "memory.free": ("memory.free [MiB]", "MiB", lambda g, s: str(g["memory_total_mib"] - _used(g, s))),
    "memory.reserved": ("memory.reserved [MiB]", "MiB", lambda g, s: "0"),
    "utilization.gpu": ("utilization.gpu [%]", "%", lambda g, s: str(_utilization(g, s))),
    "utilization.memory": ("utilization.memory [%]", "%", lambda g, s: str(min(100, _utilization(g, s) // 2))),
    "compute_cap": ("compute_cap", None, lambda g, s: g["compute_cap"]),
    "pci.bus_id": ("pci.bus_id", None, lambda g, s: g["pci_bus_id"]),
    "driver_version": ("driver_version", None, lambda g, s: s["driver_version"]),
    "temperature.gpu": ("temperature.gpu", None, lambda g, s: str(34 + _utilization(g, s) // 3)),
    "power.draw": ("power.draw [W]", "W", lambda g, s: f"{21.5 + 2.5 * _utilization(g, s):.2f}"),
    "persistence_mode": ("persistence_mode", None, lambda g, s: "Enabled"),
}
GPU_ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id", "compute_capability": "compute_cap"}

APP_FIELDS: dict[str, tuple[str, str | None, Getter]] = {
    "pid": ("pid", None, lambda p, s: str(p["pid"])),
    "process_name": ("process_name", None, lambda p, s: p["name"]),
    "gpu_uuid": ("gpu_uuid", None, lambda p, s: p["gpu_uuid"]),
    "gpu_name": ("gpu_name", None, lambda p, s: _gpu_of(p, s)["name"]),
    "gpu_bus_id": ("gpu_bus_id", None, lambda p, s: _gpu_of(p, s)["pci_bus_id"]),
    "used_memory": ("used_gpu_memory [MiB]", "MiB", lambda p, s: str(p["used_mib"])),
}
APP_ALIASES = {"name": "process_name", "used_gpu_memory": "used_memory"}

USAGE_ERROR = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."


def _processes_on(gpu: dict, state: dict) -> list[dict]:
    return [p for p in state["processes"] if p["gpu_index"] == gpu["index"]]


def _used(gpu: dict, state: dict) -> int:
    used = state.get("baseline_used_mib", 0) + sum(int(p["used_mib"]) for p in _processes_on(gpu, state))
    return min(used, gpu["memory_total_mib"])


def _utilization(gpu: dict, state: dict) -> int:
    return min(100, sum(int(p.get("utilization", 3 if p.get("engine") else 0)) for p in _processes_on(gpu, state)))


def _gpu_of(process: dict, state: dict) -> dict:
    return next(g for g in state["gpus"] if g["index"] == process["gpu_index"])


def _csv(rows: list[dict], fields: list[str], table: dict, state: dict, header: bool, units: bool) -> list[str]:
    lines = []
    if header:
        lines.append(", ".join(table[f][0] for f in fields))
    for row in rows:
        values = []
        for field in fields:
            _, unit, getter = table[field]
            value = getter(row, state)
            values.append(f"{value} {unit}" if unit and units else value)
        lines.append(", ".join(values))
    return lines


def _resolve(fields_arg: str, table: dict, aliases: dict[str, str]) -> list[str] | str:
    fields = []
    for raw in fields_arg.split(","):
        name = aliases.get(raw.strip(), raw.strip())
        if name not in table:
            return f'Field "{raw.strip()}" is not a valid field to query.'
        fields.append(name)
    return fields


def _table(state: dict, gpus: list[dict]) -> list[str]:
    bar = "+-----------------------------------------+------------------------+----------------------+"
    lines = [
        time.strftime("%a %b %d %H:%M:%S %Y"),
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {state['driver_version']:<22} Driver Version: {state['driver_version']:<14} "
        f"CUDA Version: {state['cuda_version']:<8} |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]

    def cell(left: str, right: str, width: int) -> str:
        return left + right.rjust(width - len(left))

    def row(left: str, middle: str, right: str) -> str:
        # the three cells of the real table are 41, 24 and 22 characters wide
        return f"|{left:<41}|{middle:>24}|{right:>22}|"

    for g in gpus:
        util = _utilization(g, state)
        memory = f"{_used(g, state)}MiB / {g['memory_total_mib']}MiB "
        lines += [
            row(cell(f" {g['index']:>3}  {g['name'][:28]}", "On  ", 41), f"{g['pci_bus_id']} Off ", "Off "),
            row(
                cell(f" 30%   {34 + util // 3}C    P8", f"{21 + util * 2}W /  300W ", 41),
                memory,
                f"{util}%      Default ",
            ),
            row("", "", "N/A "),
            bar,
        ]
    lines += [
        "",
        "+-----------------------------------------------------------------------------------------+",
        "| Processes:                                                                              |",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
    ]
    shown = [p for p in state["processes"] if any(p["gpu_index"] == g["index"] for g in gpus)]
    if not shown:
        lines.append("|  No running processes found                                                             |")
    for p in shown:
        name = p["name"] if len(p["name"]) <= 34 else "..." + p["name"][-31:]
        lines.append(
            f"| {p['gpu_index']:>4}   N/A  N/A  {p['pid']:>13}      C   {name:<34} {str(p['used_mib']) + 'MiB':>10} |"
        )
    lines.append("+-----------------------------------------------------------------------------------------+")
    return lines


def _topo_p2p(gpus: list[dict]) -> list[str]:
    head = " \t" + "".join(f"GPU{g['index']}\t" for g in gpus)
    lines = [head]
    for a in gpus:
        cells = "".join(("X" if a is b else (a["p2p"] if a["p2p"] == b["p2p"] else "CNS")) + "\t" for b in gpus)
        lines.append(f" GPU{a['index']}\t{cells}")
    lines += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  OK   = Status Ok",
        "  CNS  = Chipset not supported",
        "  GNS  = GPU not supported",
        "  TNS  = Topology not supported",
        "  NS   = Not supported",
        "  U    = Unknown",
    ]
    return lines


def _take_value(args: list[str], i: int, flag: str) -> tuple[str | None, int]:
    """`--flag=value` or `--flag value`; returns (value, next index)."""
    arg = args[i]
    if arg.startswith(flag + "="):
        return arg[len(flag) + 1 :], i + 1
    if i + 1 < len(args):
        return args[i + 1], i + 2
    return None, i + 1


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    state = read_state()
    out = sys.stdout

    if args == ["--version"]:
        driver = state["driver_version"]
        print(
            f"NVIDIA-SMI version  : {driver}\nNVML version        : {driver.rsplit('.', 1)[0]}\n"
            f"DRIVER version      : {driver}\nCUDA Version        : {state['cuda_version']}",
            file=out,
        )
        return 0

    if args[:1] == ["topo"]:
        if args[1:] in (["-p2p", "r"], ["--p2pstatus", "r"]):
            print("\n".join(_topo_p2p(state["gpus"])), file=out)
            return 0
        print(USAGE_ERROR, file=out)
        return 2

    query_gpu = query_apps = fmt = ids = None
    list_gpus = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--query-gpu"):
            query_gpu, i = _take_value(args, i, "--query-gpu")
        elif arg.startswith("--query-compute-apps"):
            query_apps, i = _take_value(args, i, "--query-compute-apps")
        elif arg.startswith("--format"):
            fmt, i = _take_value(args, i, "--format")
        elif arg.startswith("--id"):
            ids, i = _take_value(args, i, "--id")
        elif arg == "-i":
            ids, i = _take_value(args, i, "-i")
        elif arg in ("-L", "--list-gpus"):
            list_gpus, i = True, i + 1
        else:
            print(USAGE_ERROR, file=out)
            return 2

    gpus = state["gpus"]
    if ids is not None:
        wanted = [s.strip() for s in ids.split(",")]
        gpus = [g for g in gpus if str(g["index"]) in wanted or g["uuid"] in wanted]
        if not gpus:
            print("No devices were found", file=out)
            return 6

    if list_gpus:
        for g in gpus:
            print(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})", file=out)
        return 0

    if query_gpu is not None or query_apps is not None:
        options = [o.strip() for o in (fmt or "").split(",")]
        if "csv" not in options:
            print("Format must be specified as --format=csv[,noheader][,nounits]", file=out)
            return 2
        header, units = "noheader" not in options, "nounits" not in options
        if query_gpu is not None:
            fields = _resolve(query_gpu, GPU_FIELDS, GPU_ALIASES)
            rows, table = gpus, GPU_FIELDS
        else:
            fields = _resolve(query_apps or "", APP_FIELDS, APP_ALIASES)
            indices = {g["index"] for g in gpus}
            rows, table = [p for p in state["processes"] if p["gpu_index"] in indices], APP_FIELDS
        if isinstance(fields, str):
            print(fields, file=out)
            print("", file=out)
            return 2
        lines = _csv(rows, fields, table, state, header, units)
        if lines:
            print("\n".join(lines), file=out)
        return 0

    print("\n".join(_table(state, gpus)), file=out)
    return 0


def run() -> int:
    """main() for the command line: a reader that stops early (`| head`) is not an error."""
    try:
        return main()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(run())
