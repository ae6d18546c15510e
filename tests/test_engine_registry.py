"""The engine registry is the one place the set of engines is known: names validated against it, request words
read through it, flags spelled by the engine (by the build's help or its release), argv read from where the engine's
own flags start."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.inventory import Inventory, InventoryHost
from bot.models import DeployRequest, EngineInstall, ParseError
from bot.parse.reader import parse_request
from bot.simhost.captures import help_text
from planners import argv as argv_
from planners.engines import registry
from planners.engines.base import Discovery, EngineBase
from planners.engines.logdialect import LogDialect


def test_an_unknown_engine_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValidationError) as refused:
        DeployRequest(action="start", engine="tgi")
    assert "unknown engine 'tgi': one of sglang, vllm" in str(refused.value)
    with pytest.raises(ValidationError):
        EngineInstall(name="SGLang")  # names are the registry's ids, not labels
    assert DeployRequest(action="start", engine="vllm").engine == "vllm"


def test_words_name_engines_whatever_the_case_and_separators() -> None:
    assert registry.from_word("SG-Lang") is registry.get("sglang")
    assert registry.from_word("sgl") is registry.get("sglang")
    assert registry.from_word("V_LLM") is registry.get("vllm")
    assert registry.from_word("v llm") is registry.get("vllm")
    assert registry.from_word("vulkan") is None
    assert registry.names()[:2] == ("sglang", "vllm")  # the planner's preference order


class _Binary(EngineBase):
    name = "toybin"
    label = "ToyBin"
    aliases = ("toy-server",)  # has a "v": the parser once took any engine word with a "v" for vLLM
    discovery = Discovery(binary="toy-server", cmdline_marks=("toy-server",))
    core_flags = ("--model",)
    flag_names = {"model": "--model", "port": "--port", "context": "--ctx"}
    dialect = LogDialect(fingerprint=__import__("re").compile("toy-server"), ready=(), weights_loaded=(),
                         kv_allocated=())


def test_a_registered_engine_is_known_until_it_is_removed() -> None:
    engine = registry.register(_Binary())
    try:
        assert registry.names()[-1] == "toybin" and DeployRequest(action="start", engine="toybin").engine == "toybin"
        assert registry.serving("/opt/bin/toy-server --model /m --port 1") is engine
        inventory = Inventory(hosts={"CT129": InventoryHost(name="CT129", models=["Qwen3-8B"], gpu_count=1)})
        request = parse_request("start Qwen3-8B on CT129 using toy-server", inventory)
        assert isinstance(request, DeployRequest) and request.engine == "toybin"
        refused = parse_request("start Qwen3-8B on CT129, not sglang", inventory)
        assert isinstance(refused, ParseError) and "which engine then" in refused.message
        assert refused.suggestions == ["using vllm", "using toybin"]
        assert engine.launcher("/usr/bin/python3") == ["toy-server"]
        assert argv_.split(["toy-server", "--model", "/m", "--ctx", "4096"], engine) == (
            ["toy-server"], ["--model", "/m", "--ctx", "4096"])
        with pytest.raises(KeyError, match="ToyBin has no flag for 'mem_fraction'"):
            engine.flag("mem_fraction")
    finally:
        registry.unregister("toybin")
    assert not registry.is_engine("toybin")
    with pytest.raises(ValidationError):
        DeployRequest(action="start", engine="toybin")


def test_a_python_engines_flags_start_after_its_module() -> None:
    sglang = registry.get("sglang")
    argv = ["/env/bin/python", "-m", "sglang.launch_server", "--model-path", "/m", "--port", "30000"]
    assert argv_.split(argv, sglang) == (argv[:3], argv[3:])
    assert argv_.value_of(argv, ["--port"]) == "30000"


def test_flag_follows_the_release_and_the_builds_help() -> None:
    vllm, sglang = registry.get("vllm"), registry.get("sglang")
    # the captures: 0.11.0 lists --cuda-graph-sizes, 0.17.0 --max-cudagraph-capture-size
    assert vllm.flag("graph_bs", version="0.11.0") == "--cuda-graph-sizes"
    assert vllm.flag("graph_bs", version="0.17.0") == "--max-cudagraph-capture-size"
    assert vllm.flag("graph_bs", help_=vllm.parse_help(help_text("vllm", "0.11.0"))) == "--cuda-graph-sizes"
    # SGLang renamed its mamba strategy flag between the captured 0.5.11 and 0.5.23 (planners/engines/sglang/renames.py)
    assert sglang.flag("mamba_strategy", version="0.5.9") == "--mamba-scheduler-strategy"
    assert sglang.flag("mamba_strategy", version="0.5.23") == "--mamba-radix-cache-strategy"
    assert sglang.flag("mem_fraction") == "--mem-fraction-static" and vllm.flag("mem_fraction") == "--gpu-memory-utilization"
