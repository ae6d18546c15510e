"""A simulated GPU host for CI, tests and `deploybot demo`: a folder with a fake nvidia-smi, real-shaped model
folders and fake `sglang` / `vllm` packages that start, log, serve /health and crash like the real engines.

    host = build_sim_host(tmp_path, gpus="2xA6000", scenario="healthy", ready_after_s=1.0)
    app_yaml_hosts = {"sim": host.host_config()}
"""

from bot.simhost.host import SimHost, build_sim_host
from bot.simhost.presets import GPU_PRESETS
from bot.simhost.scenarios import resolve_scenario, scenario_names

__all__ = ["GPU_PRESETS", "SimHost", "build_sim_host", "resolve_scenario", "scenario_names"]
