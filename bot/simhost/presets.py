"""GPU presets of the simulated host: what `nvidia-smi` on a real box of that kind reports.

memory.total figures are the MiB that nvidia-smi prints on those cards (not the marketing GB). `p2p` is what
`nvidia-smi topo -p2p r` answers between two of them: consumer cards (RTX 4090) have no peer access.
"""

from __future__ import annotations

from typing import Final


def _gpus(count: int, name: str, memory_total_mib: int, compute_cap: str, p2p: str) -> list[dict]:
    return [
        {"name": name, "memory_total_mib": memory_total_mib, "compute_cap": compute_cap, "p2p": p2p}
        for _ in range(count)
    ]


GPU_PRESETS: Final[dict[str, list[dict]]] = {
    "2xA6000": _gpus(2, "NVIDIA RTX A6000", 49140, "8.6", "OK"),
    "4x4090": _gpus(4, "NVIDIA GeForce RTX 4090", 24564, "8.9", "CNS"),
    "8xH100": _gpus(8, "NVIDIA H100 80GB HBM3", 81559, "9.0", "OK"),
    "1xA100-80": _gpus(1, "NVIDIA A100-SXM4-80GB", 81920, "8.0", "OK"),
}

#: Driver and CUDA version the fake nvidia-smi reports (a driver current in 2026 on all four card kinds).
DRIVER_VERSION: Final = "570.172.08"
CUDA_VERSION: Final = "12.8"
#: What an idle GPU already shows as used (driver reservations), so memory.used is never exactly the processes' sum.
BASELINE_USED_MIB: Final = 300
