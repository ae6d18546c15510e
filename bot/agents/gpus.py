"""The probe's reading of the GPUs: NVML through pynvml when the host has it, else `nvidia-smi`'s CSV; each GPU's
memory and utilisation, the processes on it, the driver and CUDA versions, P2P between GPUs.

Sent to the host in front of probe_agent.py (bot/probe.py AGENT_HELPERS), so standard library only, plus pynvml
when the host has it; one script with it on the host, one module of its own here.
"""

import shutil
import subprocess

MIB = 1024 * 1024


def _gpus_nvml():
    import pynvml  # noqa: PLC0415 - optional on the host

    pynvml.nvmlInit()
    try:
        out = {"gpu_source": "nvml", "gpus": [], "gpu_processes": [], "p2p": {}}
        out["driver_version"] = _text(pynvml.nvmlSystemGetDriverVersion())
        try:
            cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
            out["cuda_version"] = "%d.%d" % (cuda // 1000, (cuda % 1000) // 10)
        except Exception:  # noqa: BLE001 - older drivers lack it
            pass
        handles = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            handles.append(handle)
            mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
            gpu = {
                "index": index,
                "name": _text(pynvml.nvmlDeviceGetName(handle)),
                "uuid": _text(pynvml.nvmlDeviceGetUUID(handle)),
                "memory_total_bytes": int(mem.total),
                "memory_used_bytes": int(mem.used),
                "memory_free_bytes": int(mem.free),
            }
            try:
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
                gpu["compute_capability"] = "%d.%d" % (major, minor)
            except Exception:  # noqa: BLE001
                pass
            try:
                gpu["utilization_pct"] = int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            except Exception:  # noqa: BLE001
                pass
            try:
                gpu["pci_bus_id"] = _text(pynvml.nvmlDeviceGetPciInfo(handle).busId)
            except Exception:  # noqa: BLE001
                pass
            out["gpus"].append(gpu)
            procs = []
            for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
                try:
                    procs.extend(getattr(pynvml, getter)(handle))
                except Exception:  # noqa: BLE001
                    pass
            seen = set()
            for proc in procs:
                if proc.pid in seen:
                    continue
                seen.add(proc.pid)
                used = getattr(proc, "usedGpuMemory", None)
                out["gpu_processes"].append(
                    {"pid": int(proc.pid), "gpu_index": index, "gpu_uuid": gpu["uuid"],
                     "used_bytes": int(used) if isinstance(used, int) else None}
                )
        for i in range(len(handles)):
            for j in range(i + 1, len(handles)):
                try:
                    status = pynvml.nvmlDeviceGetP2PStatus(handles[i], handles[j], pynvml.NVML_P2P_CAPS_INDEX_READ)
                    out["p2p"]["%d-%d" % (i, j)] = "ok" if status == pynvml.NVML_P2P_STATUS_OK else "not supported"
                except Exception:  # noqa: BLE001
                    pass
        return out
    finally:
        pynvml.nvmlShutdown()


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


GPU_FIELDS = ["index", "name", "uuid", "memory.total", "memory.used", "memory.free", "utilization.gpu",
              "compute_cap", "pci.bus_id", "driver_version"]


def _csv(args):
    done = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise RuntimeError("nvidia-smi exited %d: %s" % (done.returncode, done.stderr.strip()[:300]))
    return [[c.strip() for c in line.split(",")] for line in done.stdout.splitlines() if line.strip()]


def _int_or_none(text):
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return None


def _gpus_smi():
    out = {"gpu_source": "nvidia-smi", "gpus": [], "gpu_processes": [], "p2p": {}}
    by_uuid = {}
    for row in _csv(["--query-gpu=" + ",".join(GPU_FIELDS)]):
        values = dict(zip(GPU_FIELDS, row))
        gpu = {
            "index": int(values["index"]),
            "name": values["name"],
            "uuid": values.get("uuid"),
            "memory_total_bytes": int(float(values["memory.total"]) * MIB),
            "memory_used_bytes": int(float(values["memory.used"]) * MIB),
            "memory_free_bytes": int(float(values["memory.free"]) * MIB),
            "utilization_pct": _int_or_none(values.get("utilization.gpu")),
            "compute_capability": values.get("compute_cap") if values.get("compute_cap") not in (None, "[N/A]") else None,
            "pci_bus_id": values.get("pci.bus_id"),
        }
        out["driver_version"] = values.get("driver_version")
        out["gpus"].append(gpu)
        by_uuid[gpu["uuid"]] = gpu["index"]
    for row in _csv(["--query-compute-apps=pid,gpu_uuid,used_memory,process_name"]):
        if len(row) < 3 or not row[0].isdigit():
            continue
        used = _int_or_none(row[2])
        out["gpu_processes"].append({
            "pid": int(row[0]), "gpu_uuid": row[1], "gpu_index": by_uuid.get(row[1]),
            "used_bytes": used * MIB if used is not None else None,
            "name": row[3] if len(row) > 3 else None,
        })
    return out


def gpus():
    errors = []
    try:
        return _gpus_nvml()
    except Exception as exc:  # noqa: BLE001 - no driver, no pynvml: fall back
        errors.append("NVML: %s" % exc)
    if shutil.which("nvidia-smi"):
        try:
            return _gpus_smi()
        except Exception as exc:  # noqa: BLE001
            errors.append("nvidia-smi: %s" % exc)
    else:
        errors.append("nvidia-smi: not found")
    return {"gpu_source": "none", "gpus": [], "gpu_processes": [], "gpu_error": "; ".join(errors)}
