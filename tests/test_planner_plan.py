"""Plans for the corpus fleet (shared/corpus/inventory.json) that an expert would sign, and the refusals."""

from __future__ import annotations

import argparse
import json
import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import AppConfig, Policy
from bot.models import DeployRequest, LaunchPlan, PlanFailure, PlanOverrides, ServerInfo
from planners.engines.sglang import flags as sglang_flags
from planners.model import model_spec
from planners.plan import choose_host, make_plan, tp_problem
from tests.test_planner_support import (
    GIB,
    POLICY,
    SGLANG_FLAGS,
    VLLM_FLAGS,
    config_names,
    fleet_facts,
    foreign_process,
    host_config,
    inventory,
    load_config,
    sglang_help,
    vllm_help,
)


def plan(
    host: str,
    model: str,
    *,
    facts_kwargs: dict | None = None,
    overrides: PlanOverrides | None = None,
    policy: Policy = POLICY,
    **request,
) -> LaunchPlan | PlanFailure:
    facts = fleet_facts(host, model, **(facts_kwargs or {}))
    return make_plan(
        DeployRequest(action="start", model=model, host=host, **request), facts, host_config(host), policy, overrides
    )


def ok(result: LaunchPlan | PlanFailure) -> LaunchPlan:
    assert isinstance(result, LaunchPlan), getattr(result, "reason", result)
    return result


def failed(result: LaunchPlan | PlanFailure) -> PlanFailure:
    assert isinstance(result, PlanFailure), f"expected a refusal, got a plan: {result}"
    return result


def parser_for(flags: list[tuple[list[str], dict]]) -> argparse.ArgumentParser:
    """The engine's argument parser as far as the notes describe it: argv must parse with it."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    for names, kwargs in flags:
        parser.add_argument(*names, **kwargs)
    return parser


def arg(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


# ---------------------------------------------------------------------------------------------- the headline case


def test_qwen36_on_ct129_with_stock_mtp_sglang() -> None:
    p = ok(plan("CT129", "Qwen3.6-27B", speculative="mtp", facts_kwargs={"engine_help": {"sglang": sglang_help()}}))
    assert (p.engine, p.tp, p.gpus, p.speculative) == ("sglang", 2, [0, 1], "mtp")
    python = host_config("CT129").python
    assert p.argv[:12] == [
        python,
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/root/models/Qwen3.6-27B",
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
        "--tp-size",
        "2",
        "--served-model-name",
    ]
    # the full speculative set, draft = steps + 1 at topk 1 (nothing for SGLang to rewrite or assert on)
    assert arg(p.argv, "--speculative-algorithm") in {"EAGLE", "NEXTN"}
    steps = int(arg(p.argv, "--speculative-num-steps") or 0)
    assert steps >= 1 and arg(p.argv, "--speculative-eagle-topk") == "1"
    assert int(arg(p.argv, "--speculative-num-draft-tokens") or 0) == steps + 1
    assert sglang_flags.check_speculative_args(p.argv) == ([], [])
    # hybrid GDN + MTP: a state strategy that rolls back rejected drafts, bf16 SSM on a 48 GB card
    assert arg(p.argv, "--mamba-scheduler-strategy") == "extra_buffer"
    assert arg(p.argv, "--mamba-ssm-dtype") == "bfloat16"
    assert "--trust-remote-code" in p.argv
    assert p.env["CUDA_VISIBLE_DEVICES"] == "0,1" and p.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    # explicit limits so nothing is silently reset (max running requests would become 48)
    assert int(arg(p.argv, "--max-running-requests") or 0) >= 1
    assert 0.7 <= float(arg(p.argv, "--mem-fraction-static") or 0) <= 0.85
    assert 32768 <= p.context_length <= 262144
    # figures: ~25.9 GiB of weights per GPU (+ the draft runner's embedding/head), KV for the planned context
    for g in p.per_gpu:
        assert 25 * GIB < g.weights_bytes < 29 * GIB
        assert g.kv_tokens >= p.context_length and g.margin_bytes >= 2 * GIB
    assert p.kv_bytes_per_token == 34 * 1024  # 16 full-attention layers + 1 MTP layer, 2 KV heads per GPU
    assert any(r.startswith("TP 2:") and "48.0 GiB" in r for r in p.reasons)
    assert any("flags checked" in r for r in p.reasons)
    parser_for(SGLANG_FLAGS).parse_args(p.argv[3:])  # every flag and value is accepted by such a parser


def test_qwen36_on_ct129_with_mtp_vllm() -> None:
    p = ok(
        plan(
            "CT129",
            "Qwen3.6-27B",
            speculative="mtp",
            engine="vllm",
            facts_kwargs={"engines": {"sglang": "0.5.10", "vllm": "0.17.1"}, "engine_help": {"vllm": vllm_help()}},
        )
    )
    assert (p.engine, p.tp) == ("vllm", 2)
    assert p.argv[2] == "vllm.entrypoints.openai.api_server"
    assert arg(p.argv, "--model") == "/root/models/Qwen3.6-27B"
    assert arg(p.argv, "--served-model-name") == "Qwen3.6-27B"
    assert arg(p.argv, "--tensor-parallel-size") == "2"
    assert json.loads(arg(p.argv, "--speculative-config") or "{}") == {"method": "mtp", "num_speculative_tokens": 1}
    assert arg(p.argv, "--gpu-memory-utilization") == "0.90"
    assert int(arg(p.argv, "--max-model-len") or 0) == p.context_length == 262144  # MEMORY_MODEL.md §6: fits
    parser_for(VLLM_FLAGS).parse_args(p.argv[3:])
    # shell-safe: the JSON survives quoting as one argument
    assert shlex.split(shlex.join(p.argv)) == p.argv


def test_without_speculation_the_mtp_head_is_not_counted() -> None:
    with_mtp = ok(plan("CT129", "Qwen3.6-27B", speculative="mtp"))
    without = ok(plan("CT129", "Qwen3.6-27B", speculative="none"))
    assert without.weights_bytes < with_mtp.weights_bytes
    assert "--speculative-algorithm" not in without.argv and without.speculative == "none"
    assert not any(r.code == "silent_rewrite" for r in without.risks)


# ---------------------------------------------------------------------------------------------- the fleet


def test_deepseek_v3_does_not_fit_ct129_with_numbers_and_a_nearest_plan() -> None:
    f = failed(plan("CT129", "DeepSeek-V3"))
    assert "does not fit" in f.reason and "GiB" in f.reason and "96.0 GiB" in f.reason
    assert f.weights_bytes and f.weights_bytes > 600 * GIB
    assert any("641" in d or "642" in d for d in f.details)  # the FP8 checkpoint with its MTP layer
    assert f.nearest and "H200" in f.nearest
    assert any("sm89" in d for d in f.details)  # and FP8 on sm86 would not run in SGLang anyway


def test_deepseek_v3_fp8_on_8x_h100_does_not_fit_either() -> None:
    f = failed(plan("h100-01", "DeepSeek-V3", tp=8, quantization="fp8"))
    assert "TP 8" in f.reason and "78.6 GiB" in f.reason
    assert f.nearest and "H200" in f.nearest


def test_llama_8b_on_one_4090() -> None:
    p = ok(plan("CT130", "Llama-3.1-8B-Instruct"))
    assert (p.tp, len(p.gpus)) == (1, 1)
    assert p.context_length < 131072  # capped to what 24 GiB holds after 15 GiB of weights
    assert any("Context capped" in r for r in p.reasons)
    assert p.per_gpu[0].kv_tokens >= p.context_length


def test_qwen3_32b_on_one_a100_80gb() -> None:
    p = ok(plan("gpu-box-3", "Qwen3-32B"))
    assert (p.tp, p.gpus) == (1, [0])
    assert p.per_gpu[0].weights_bytes == pytest.approx(61.0 * GIB, rel=0.01)
    assert 8192 <= p.context_length <= 40960


def test_llama_70b_on_h100_uses_tp_2_or_4() -> None:
    p = ok(plan("h100-01", "Llama-3.1-70B-Instruct"))
    assert p.tp in {2, 4}
    assert p.context_length == 131072


def test_llama_70b_on_named_gpus() -> None:
    p = ok(plan("h100-01", "Llama-3.1-70B-Instruct", gpus=[4, 5, 6, 7]))
    assert (p.tp, p.gpus, p.env["CUDA_VISIBLE_DEVICES"]) == (4, [4, 5, 6, 7], "4,5,6,7")


def test_qwen3_30b_a3b_tp2_on_4090s_refused_with_tp4_as_nearest() -> None:
    f = failed(
        plan("CT130", "Qwen3-30B-A3B", engine="vllm", tp=2, port=8100, facts_kwargs={"engines": {"vllm": "0.11.0"}})
    )
    assert "TP 2" in f.reason and "28.4 GiB" in f.reason
    assert f.nearest and "TP 4" in f.nearest
    p = ok(plan("CT130", "Qwen3-30B-A3B", engine="sglang", tp=4))
    assert p.tp == 4


def test_gemma_on_both_a6000s() -> None:
    p = ok(plan("CT129", "gemma-3-27b-it", tp=2))
    assert p.tp == 2 and p.gpus == [0, 1]
    assert any("sliding-window" in r for r in p.reasons)


def test_tp_that_does_not_divide_the_kv_heads_is_refused() -> None:
    f = failed(plan("CT129", "Qwen3.6-27B", tp=3))
    assert "4 KV heads" in f.reason
    assert f.nearest == "TP 2 or 4"


def test_every_config_on_every_host_plans_consistently() -> None:
    for host in inventory():
        for name in config_names():
            for speculative in ("none", "mtp"):
                result = plan(
                    host,
                    name,
                    speculative=speculative,
                    facts_kwargs={"engines": {"sglang": "0.5.10", "vllm": "0.17.1"}},
                )
                if isinstance(result, PlanFailure):
                    assert result.reason
                    continue
                spec = model_spec(load_config(name))
                assert result.argv[0] == host_config(host).python
                assert tp_problem(spec, result.tp) is None
                assert len(result.gpus) == result.tp
                assert result.context_length <= (spec.max_position_embeddings or 0)
                assert result.env["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, result.gpus))
                for g in result.per_gpu:
                    assert g.weights_bytes + g.kv_bytes <= g.total_bytes
                    assert g.kv_tokens >= result.context_length
                assert LaunchPlan.model_validate_json(result.model_dump_json()) == result


# ---------------------------------------------------------------------------------------------- refusals and risks


def test_mtp_on_a_model_without_heads_is_refused() -> None:
    f = failed(plan("CT129", "Llama-3.1-8B-Instruct", speculative="mtp"))
    assert "no MTP heads" in f.reason and f.nearest and "without speculative" in f.nearest


def test_mtp_on_a_model_whose_config_does_not_say_is_allowed_with_a_risk() -> None:
    facts = fleet_facts("CT129", "Qwen3.6-27B")
    folder = facts.model.model_copy(update={"name": "Qwen3.5-27B", "config": load_config("Qwen3.5-27B")})
    facts = facts.model_copy(update={"model": folder})
    p = ok(
        make_plan(
            DeployRequest(action="start", model="Qwen3.5-27B", host="CT129", speculative="mtp"),
            facts,
            host_config("CT129"),
            POLICY,
        )
    )
    assert any(r.code == "unknown_mtp" for r in p.risks)


def test_fp8_on_ampere_refused_by_sglang_and_served_by_vllm_weight_only() -> None:
    f = failed(plan("CT129", "Qwen3-32B", quantization="fp8"))
    assert "sm89" in f.reason
    p = ok(
        plan("CT129", "Qwen3-32B", quantization="fp8", facts_kwargs={"engines": {"sglang": "0.5.10", "vllm": "0.17.1"}})
    )
    assert p.engine == "vllm" and arg(p.argv, "--quantization") == "fp8"
    assert any(r.code == "fp8_weight_only" for r in p.risks)
    assert any(r.startswith("Not the other engine: SGLang") for r in p.reasons)


def test_engine_too_old_is_refused_or_the_other_engine_used() -> None:
    f = failed(plan("CT129", "Qwen3.6-27B", facts_kwargs={"engines": {"sglang": "0.5.9"}}))
    assert ">= 0.5.10" in f.reason and f.nearest and "0.5.10" in f.nearest
    p = ok(plan("CT129", "Qwen3.6-27B", facts_kwargs={"engines": {"sglang": "0.5.9", "vllm": "0.17.1"}}))
    assert p.engine == "vllm"


def test_sglang_preferred_when_both_are_installed_and_nothing_asked() -> None:
    p = ok(plan("CT129", "Llama-3.1-8B-Instruct", facts_kwargs={"engines": {"vllm": "0.17.1", "sglang": "0.5.10"}}))
    assert p.engine == "sglang"


def test_asked_engine_not_installed() -> None:
    f = failed(plan("CT129", "Llama-3.1-8B-Instruct", engine="vllm"))
    assert "not installed" in f.reason and f.nearest and "SGLang" in f.nearest


def test_old_engine_risk() -> None:
    p = ok(plan("CT129", "Llama-3.1-8B-Instruct", facts_kwargs={"engines": {"vllm": "0.8.5"}}))
    assert any(r.code == "old_engine" and "0.10.0" in r.message for r in p.risks)


def test_busy_gpu_is_avoided_and_a_named_busy_gpu_is_a_shared_risk() -> None:
    busy = {"used": {0: 20 * GIB}, "processes": [foreign_process(0, 20)]}
    p = ok(plan("CT129", "Llama-3.1-8B-Instruct", facts_kwargs=busy))
    assert p.gpus == [1] and not any(r.code == "shared_gpu" for r in p.risks)
    p = ok(plan("CT129", "Llama-3.1-8B-Instruct", gpus=[0], facts_kwargs=busy))
    risk = next(r for r in p.risks if r.code == "shared_gpu")
    assert "pid 4242" in risk.message and "20.0 GiB" in risk.message
    assert p.per_gpu[0].kv_bytes < 10 * GIB  # the other process's memory came out of SGLang's pool


def test_vllm_lowers_utilization_on_a_shared_gpu() -> None:
    busy = {"used": {0: 20 * GIB}, "processes": [foreign_process(0, 20)], "engines": {"vllm": "0.17.1"}}
    p = ok(plan("CT129", "Llama-3.1-8B-Instruct", gpus=[0], facts_kwargs=busy))
    utilization = float(arg(p.argv, "--gpu-memory-utilization") or 1)
    assert utilization * p.per_gpu[0].total_bytes <= p.per_gpu[0].free_bytes
    assert any("lowered" in r for r in p.reasons)


def test_thin_margin_when_the_asked_context_barely_fits() -> None:
    p = ok(plan("CT130", "Llama-3.1-8B-Instruct", gpus=[0], context_length=40960))
    risk = next(r for r in p.risks if r.code == "thin_margin")
    assert "40960" in risk.message and "2.0 GiB" in risk.message


def test_context_longer_than_the_model_is_refused() -> None:
    f = failed(plan("gpu-box-3", "Qwen3-32B", context_length=131072))
    assert "40960" in f.reason and f.nearest == "context 40960"


def test_asked_context_is_used_and_the_larger_tp_chosen_when_needed() -> None:
    p = ok(plan("CT130", "Llama-3.1-8B-Instruct", context_length=131072))
    assert p.context_length == 131072 and p.tp >= 2


def test_ports_requested_busy_and_automatic() -> None:
    server = ServerInfo(engine="sglang", model_path="/data/models/Qwen3-30B-A3B", port=30001)
    facts = {"listening": [30000], "processes": [foreign_process(3, 10, pid=77, server=server)]}
    p = ok(plan("CT130", "Llama-3.1-8B-Instruct", facts_kwargs=facts))
    assert p.port == 30002
    f = failed(plan("CT130", "Llama-3.1-8B-Instruct", port=30001, facts_kwargs=facts))
    assert "Qwen3-30B-A3B" in f.reason and f.nearest == "port 30002 is free"
    assert ok(plan("CT130", "Llama-3.1-8B-Instruct", port=8001)).port == 8001


def test_unknown_extra_flag_is_caught_with_the_closest_name() -> None:
    f = failed(
        plan(
            "CT129",
            "Llama-3.1-8B-Instruct",
            facts_kwargs={"engine_help": {"sglang": sglang_help()}},
            overrides=PlanOverrides(extra_args=["--speculative-draft-tokens", "4"]),
        )
    )
    assert "--speculative-draft-tokens" in f.reason
    assert f.nearest and "--speculative-num-draft-tokens" in f.nearest


def test_partial_speculative_knobs_are_refused_and_rewrites_are_flagged() -> None:
    f = failed(
        plan(
            "CT129",
            "Llama-3.1-8B-Instruct",
            overrides=PlanOverrides(extra_args=["--speculative-num-draft-tokens", "2"]),
        )
    )
    assert "set all three or none" in f.reason
    p = ok(
        plan(
            "CT129",
            "Qwen3.6-27B",
            speculative="mtp",
            overrides=PlanOverrides(extra_args=["--speculative-num-draft-tokens", "2"]),
        )
    )
    assert any(r.code == "silent_rewrite" and "rewrites" in r.message for r in p.risks)
    assert p.argv.count("--speculative-num-draft-tokens") == 1


def test_overrides_are_applied_and_protected_flags_kept() -> None:
    p = ok(
        plan(
            "CT129",
            "Llama-3.1-8B-Instruct",
            overrides=PlanOverrides(
                mem_fraction=0.7, cuda_graph_max_bs=8, disable_cuda_graph=False, env={"NCCL_P2P_DISABLE": "1"}
            ),
        )
    )
    assert arg(p.argv, "--mem-fraction-static") == "0.7" and arg(p.argv, "--cuda-graph-max-bs") == "8"
    assert p.env["NCCL_P2P_DISABLE"] == "1"
    f = failed(plan("CT129", "Llama-3.1-8B-Instruct", overrides=PlanOverrides(remove_args=["--port"])))
    assert "--port" in f.reason
    f = failed(plan("CT129", "Llama-3.1-8B-Instruct", overrides=PlanOverrides(extra_args=["--tp-size", "2"])))
    assert "--tp-size" in f.reason
    f = failed(plan("CT129", "Llama-3.1-8B-Instruct", overrides=PlanOverrides(env={"CUDA_VISIBLE_DEVICES": "1"})))
    assert "CUDA_VISIBLE_DEVICES" in f.reason


def test_help_variants_choose_the_flags_the_build_knows() -> None:
    newest = sglang_help(drop=("--mamba-scheduler-strategy",))
    newest = newest.replace(
        "[--max-mamba-cache-size",
        "[--mamba-radix-cache-strategy {auto,no_buffer,extra_buffer}] [--max-mamba-cache-size",
    )
    newest += "  --mamba-radix-cache-strategy {auto,no_buffer,extra_buffer}\n"
    p = ok(plan("CT129", "Qwen3.6-27B", speculative="mtp", facts_kwargs={"engine_help": {"sglang": newest}}))
    assert arg(p.argv, "--mamba-radix-cache-strategy") == "extra_buffer"
    oldest = sglang_help(drop=("--mamba-scheduler-strategy",))
    p = ok(plan("CT129", "Qwen3.6-27B", speculative="mtp", facts_kwargs={"engine_help": {"sglang": oldest}}))
    assert "--disable-radix-cache" in p.argv
    p = ok(plan("CT129", "Qwen3.6-27B", speculative="mtp"))
    assert any("Flags not checked" in r for r in p.reasons)
    # the usage block alone (what argparse prints on an error) names each option by its first alias only
    usage_only = sglang_help().split("\n\n")[0]
    p = ok(plan("CT129", "Qwen3.6-27B", facts_kwargs={"engine_help": {"sglang": usage_only}}))
    assert arg(p.argv, "--tensor-parallel-size") == "2" and any("flags checked" in r for r in p.reasons)
    cut = "usage: launch_server.py [-h] --model-path MODEL_PATH [--host HOST]\n"
    p = ok(plan("CT129", "Qwen3.6-27B", facts_kwargs={"engine_help": {"sglang": cut}}))
    assert any("looks cut" in r for r in p.reasons)


def test_bad_inputs_are_refused_without_a_plan() -> None:
    assert "GPU 9" in failed(plan("CT129", "Llama-3.1-8B-Instruct", gpus=[9])).reason
    assert "TP 1 asked on 2 GPUs" in failed(plan("CT129", "Llama-3.1-8B-Instruct", gpus=[0, 1], tp=1)).reason
    assert "needs 4 GPUs" in failed(plan("CT129", "Llama-3.1-8B-Instruct", tp=4)).reason
    facts = fleet_facts("CT129", "Llama-3.1-8B-Instruct")
    request = DeployRequest(action="start", model="Qwen3-32B", host="CT129")
    assert "no model folder" in failed(make_plan(request, facts, host_config("CT129"), POLICY)).reason
    broken = facts.model_copy(
        update={"model": facts.model.model_copy(update={"config": None, "config_error": "bad JSON"})}
    )
    request = DeployRequest(action="start", model="Llama-3.1-8B-Instruct", host="CT129")
    assert "bad JSON" in failed(make_plan(request, broken, host_config("CT129"), POLICY)).reason


# ---------------------------------------------------------------------------------------------- anywhere


def app_config() -> AppConfig:
    return AppConfig(hosts={name: host_config(name) for name in inventory()}, policy=POLICY)


def test_choose_host_picks_the_most_margin_on_idle_gpus() -> None:
    request = DeployRequest(action="start", model="Llama-3.1-8B-Instruct")
    facts = {name: fleet_facts(name, "Llama-3.1-8B-Instruct") for name in inventory()}
    # h100-01's GPUs are all busy: the idle A100 wins even though an H100 has as much memory
    busy = [foreign_process(i, 5, pid=100 + i) for i in range(8)]
    facts["h100-01"] = fleet_facts(
        "h100-01", "Llama-3.1-8B-Instruct", used={i: 5 * GIB for i in range(8)}, processes=busy
    )
    result = choose_host(request, facts, app_config())
    assert not isinstance(result, PlanFailure), result
    host, p, why = result
    assert host == "gpu-box-3" and p.host == "gpu-box-3"
    assert why.startswith("gpu-box-3:") and "idle" in why and "CT130" in why


def test_choose_host_fails_with_each_hosts_reason() -> None:
    request = DeployRequest(action="start", model="DeepSeek-V3")
    facts = {name: fleet_facts(name, "DeepSeek-V3") for name in inventory()}
    f = failed(choose_host(request, facts, app_config()))
    assert "none of the 4 hosts" in f.reason
    assert len(f.details) == 4 and any(d.startswith("h100-01:") for d in f.details)


# ---------------------------------------------------------------------------------------------- any input


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    host=st.sampled_from(["CT129", "CT130", "h100-01", "gpu-box-3"]),
    model=st.sampled_from(["Qwen3.6-27B", "Llama-3.1-8B-Instruct", "Qwen3-30B-A3B", "gemma-3-27b-it", "DeepSeek-V3"]),
    tp=st.none() | st.integers(1, 8),
    gpus=st.none() | st.lists(st.integers(0, 8), min_size=1, max_size=4, unique=True),
    context=st.none() | st.integers(1, 400_000),
    speculative=st.none() | st.sampled_from(["mtp", "none"]),
    engine=st.none() | st.sampled_from(["sglang", "vllm"]),
    fraction=st.none() | st.floats(0.3, 0.97),
    used=st.integers(0, 30),
)
def test_any_request_gets_a_plan_that_holds_or_a_clear_refusal(
    host, model, tp, gpus, context, speculative, engine, fraction, used
) -> None:
    facts = {
        "engines": {"sglang": "0.5.10", "vllm": "0.17.1"},
        "used": {0: used * GIB},
        "processes": [foreign_process(0, used)] if used else [],
    }
    result = plan(
        host,
        model,
        tp=tp,
        gpus=gpus,
        context_length=context,
        speculative=speculative,
        engine=engine,
        facts_kwargs=facts,
        overrides=PlanOverrides(mem_fraction=fraction),
    )
    if isinstance(result, PlanFailure):
        assert result.reason
        return
    assert len(result.gpus) == result.tp and (tp is None or result.tp == tp)
    assert gpus is None or result.gpus == gpus
    assert context is None or result.context_length == context
    for g in result.per_gpu:
        assert g.kv_tokens >= result.context_length
        assert g.weights_bytes + g.kv_bytes <= g.free_bytes
    assert (result.speculative == "mtp") == (speculative == "mtp")
