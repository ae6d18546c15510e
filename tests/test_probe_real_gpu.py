"""The probe's answer captured on a real NVIDIA H200 (bench/gpu_probe_check.sh via the device tool), replayed.

CI has no GPU, so the real answer is kept as data: it must validate as HostFacts, show what NVML saw (name, memory,
compute capability, the process holding 8 GiB recognised as an SGLang server with its port), and plan correctly.
"""

import json
from pathlib import Path

from bot.config import HostConfig, Policy
from bot.models import DeployRequest, EngineInstall, HostFacts, LaunchPlan
from planners.plan import make_plan

DATA = Path(__file__).parent / "data" / "probe_h200.json"
GIB = 1024**3


def real_facts() -> HostFacts:
    raw = json.loads(DATA.read_text())
    raw.pop("probe_seconds", None)
    return HostFacts.model_validate({"host": "h200", **raw})


def test_nvml_answer_from_the_h200_validates_with_the_real_figures():
    facts = real_facts()
    assert facts.gpu_source == "nvml" and facts.driver_version and facts.cuda_version == "13.0"
    (gpu,) = facts.gpus
    assert gpu.name == "NVIDIA H200" and gpu.compute_capability == "9.0"
    assert 140 * GIB < gpu.memory_total_bytes < 141 * GIB
    (proc,) = facts.gpu_processes
    assert proc.server is not None and proc.server.engine == "sglang" and proc.server.port == 30123
    assert 8 * GIB < proc.used_bytes < 9 * GIB and proc.gpu_index == 0
    assert facts.model is not None and facts.model.config["architectures"] == ["Qwen3ForCausalLM"]


def test_planner_on_the_real_h200_facts_sees_the_other_server():
    facts = real_facts().model_copy(update={"engines": {"sglang": EngineInstall(name="sglang", version="0.5.10")}})
    host = HostConfig(models_dir="/models", transport="local")
    plan = make_plan(DeployRequest(action="start", model="Qwen3-8B", host="h200"), facts, host, Policy())
    assert isinstance(plan, LaunchPlan), plan
    assert plan.tp == 1 and plan.gpus == [0]
    assert plan.port != 30123  # that port is taken by the running server
    assert any(r.code == "shared_gpu" for r in plan.risks)
    budget = plan.per_gpu[0]
    assert budget.weights_bytes + budget.kv_bytes < gpu_free(facts)


def gpu_free(facts: HostFacts) -> int:
    return facts.gpus[0].memory_free_bytes
