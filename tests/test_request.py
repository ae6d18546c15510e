"""The request parser: the request corpus (tests/data/corpus), and phrasings it has never seen, against a fleet like the corpus one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.config import AppConfig, HostConfig
from bot.inventory import Inventory, InventoryHost, gpu_count_from_description
from bot.models import PUBLIC_REQUEST_FIELDS, DeployRequest, ParseError
from bot.request import (
    QUANTIZATION_METHODS,
    example_requests,
    help_text,
    is_help_request,
    parse_request,
    request_text,
)

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


def _fleet() -> Inventory:
    """The corpus fleet, written out here as well, so a change to tests/data/corpus/inventory.json is seen."""
    return Inventory(
        hosts={
            "CT129": InventoryHost(
                name="CT129",
                gpu_count=2,
                gpus="2x NVIDIA RTX A6000 (49140 MiB)",
                models=["Qwen3.6-27B", "Qwen3-32B", "Qwen3-30B-A3B", "Llama-3.1-8B-Instruct", "gemma-3-27b-it"],
            ),
            "CT130": InventoryHost(
                name="CT130",
                gpu_count=4,
                gpus="4x NVIDIA GeForce RTX 4090 (24564 MiB)",
                models=["Qwen3.6-27B", "Qwen3-30B-A3B", "Llama-3.1-8B-Instruct", "Mistral-Small-3.2-24B-Instruct-2506"],
            ),
            "h100-01": InventoryHost(
                name="h100-01",
                gpu_count=8,
                gpus="8x NVIDIA H100 80GB HBM3 (81559 MiB)",
                models=[
                    "Qwen3.6-27B",
                    "Qwen3-Next-80B-A3B-Instruct",
                    "DeepSeek-V3",
                    "Llama-3.3-70B-Instruct",
                    "Llama-3.1-8B-Instruct",
                    "GLM-4.5-Air",
                ],
            ),
            "gpu-box-3": InventoryHost(
                name="gpu-box-3",
                gpu_count=1,
                gpus="1x NVIDIA A100-SXM4-80GB (81920 MiB)",
                models=["Qwen3-32B", "Llama-3.1-8B-Instruct", "gemma-3-27b-it"],
            ),
        }
    )


FLEET = _fleet()


def _expect(got: DeployRequest | ParseError, expect: dict, check_reuse: bool = True) -> None:
    if "error" in expect:
        assert isinstance(got, ParseError), f"expected {expect['error']}, got {got}"
        assert got.kind == expect["error"], got.message
        assert got.message
        return
    assert isinstance(got, DeployRequest), f"expected a request, got {got}"
    want = dict.fromkeys(PUBLIC_REQUEST_FIELDS)
    want.update({k: v for k, v in expect.items() if k != "reuse_last"})
    assert got.public() == want
    if check_reuse:
        assert got.reuse_last == expect.get("reuse_last", False)


# ------------------------------------------------------------------------------------------ the request corpus


def _corpus_lines() -> list[dict]:
    return [json.loads(line) for line in (CORPUS / "requests.jsonl").read_text().splitlines() if line.strip()]


def test_corpus_inventory_loads_like_the_fleet_here() -> None:
    assert Inventory.from_corpus(CORPUS / "inventory.json") == FLEET


@pytest.mark.parametrize("case", _corpus_lines(), ids=lambda case: case["text"][:60])
def test_corpus_line_parses_as_expected(case: dict) -> None:
    inventory = Inventory.from_corpus(CORPUS / "inventory.json")
    # The corpus states the public fields only; reuse_last is checked among the phrasings below.
    _expect(parse_request(case["text"], inventory), case["expect"], check_reuse=False)


def test_corpus_has_every_line_checked() -> None:
    assert len(_corpus_lines()) >= 36


# ------------------------------------------------------------------------------------------ unseen phrasings

START = "start"
Q36, LLAMA8, LLAMA70 = "Qwen3.6-27B", "Llama-3.1-8B-Instruct", "Llama-3.3-70B-Instruct"

PHRASINGS: list[tuple[str, dict]] = [
    # markup and politeness
    ("could you fire up `Qwen3.6-27B` on *CT129*? MTP on please", {"action": START, "model": Q36, "host": "CT129", "speculative": "mtp"}),
    ("<@U04ABCDEF> please deploy the 8b llama on ct-130", {"action": START, "model": LLAMA8, "host": "CT130"}),
    ("hey deploybot, can you launch Qwen3.6-27B on ct129 pls? thx :pray:", {"action": START, "model": Q36, "host": "CT129"}),
    ("start “Qwen3.6-27B” on ‘CT129’", {"action": START, "model": Q36, "host": "CT129"}),
    ("start _Qwen3.6-27B_ on\nCT129\n\nwith vllm", {"action": START, "model": Q36, "host": "CT129", "engine": "vllm"}),
    ("start Qwen3.6-27B on <http://ct129.lab.local|ct129.lab.local>", {"action": START, "model": Q36, "host": "CT129"}),
    ("start Qwen3.6-27B on CT129 ~with mtp~ without mtp", {"action": START, "model": Q36, "host": "CT129", "speculative": "none"}),
    ("start `qwen3.6-27b` on `ct129` with `tp 2`", {"action": START, "model": Q36, "host": "CT129", "tp": 2}),
    ("START qwen3.6-27B ON ct129 WITH mtp!!!", {"action": START, "model": Q36, "host": "CT129", "speculative": "mtp"}),
    ("/deploy Qwen3.6-27B on CT129", {"action": START, "model": Q36, "host": "CT129"}),
    # typos and word order
    ("strat qwen3.6 27b on ct129", {"action": START, "model": Q36, "host": "CT129"}),
    ("lauch Qwen3.6-27B on CT129", {"action": START, "model": Q36, "host": "CT129"}),
    ("launch qwne 3.6 27b on ct129", {"action": START, "model": Q36, "host": "CT129"}),
    ("restrat qwen3.6-27b on ct129", {"action": "restart", "model": Q36, "host": "CT129"}),
    ("stpo qwen3.6-27b on ct129", {"action": "stop", "model": Q36, "host": "CT129"}),
    ("on CT129 start qwen 3.6 27b with mtp", {"action": START, "model": Q36, "host": "CT129", "speculative": "mtp"}),
    ("ct129: start qwen3.6-27b", {"action": START, "model": Q36, "host": "CT129"}),
    ("deploy to ct129 qwen3.6-27b", {"action": START, "model": Q36, "host": "CT129"}),
    # family shorthands and other ways to name things
    ("spin up qwen3-next on h100-01", {"action": START, "model": "Qwen3-Next-80B-A3B-Instruct", "host": "h100-01"}),
    ("start mistral small on CT130", {"action": START, "model": "Mistral-Small-3.2-24B-Instruct-2506", "host": "CT130"}),
    ("start the glm air on h100-01 with its mtp heads", {"action": START, "model": "GLM-4.5-Air", "host": "h100-01", "speculative": "mtp"}),
    ("start llama on gpu-box-3", {"action": START, "model": LLAMA8, "host": "gpu-box-3"}),  # the only llama there
    ("deploy meta-llama/Llama-3.1-8B-Instruct to CT130", {"action": START, "model": LLAMA8, "host": "CT130"}),
    ("start /root/models/Qwen3.6-27B on CT129", {"action": START, "model": Q36, "host": "CT129"}),
    ("start Qwen3.6-27B on the a6000 box", {"action": START, "model": Q36, "host": "CT129"}),
    ("start Llama-3.1-8B on the 4090s", {"action": START, "model": LLAMA8, "host": "CT130"}),
    ("start Qwen3.6-27B on the h100", {"action": START, "model": Q36, "host": "h100-01"}),
    ("start qwen3.6-27b @ct129", {"action": START, "model": Q36, "host": "CT129"}),
    # actions
    ("take down qwen 3.6 on ct129", {"action": "stop", "model": Q36, "host": "CT129"}),
    ("tear down everything on h100-01", {"action": "stop", "host": "h100-01"}),
    ("bounce the qwen3.6 server on CT129", {"action": "restart", "model": Q36, "host": "CT129"}),
    ("stop qwen3.6-27b on ct129 and start it again", {"action": "restart", "model": Q36, "host": "CT129", "reuse_last": True}),
    ("show logs for gemma on ct129", {"action": "logs", "model": "gemma-3-27b-it", "host": "CT129"}),
    ("why did qwen3.6 crash on CT129?", {"action": "logs", "model": Q36, "host": "CT129"}),
    ("is qwen 3.6 running on ct129?", {"action": "status", "model": Q36, "host": "CT129"}),
    ("show status", {"action": "status"}),
    ("list models on ct129", {"action": "status", "host": "CT129"}),
    ("I need llama 8b on CT130", {"action": START, "model": LLAMA8, "host": "CT130"}),
    ("can I get gemma on gpu-box-3?", {"action": START, "model": "gemma-3-27b-it", "host": "gpu-box-3"}),
    ("nuke the qwen3.6 server on ct129", {"action": "stop", "model": Q36, "host": "CT129"}),
    ("kill whatever is running on ct130", {"action": "stop", "host": "CT130"}),
    ("show me the last 100 lines of the qwen3.6 log on ct129", {"action": "logs", "model": Q36, "host": "CT129"}),
    ("which models are on ct129?", {"action": "status", "host": "CT129"}),
    ("anything running on ct130?", {"action": "status", "host": "CT130"}),
    ("is ct129 busy?", {"action": "status", "host": "CT129"}),
    ("how's qwen3.6 doing on ct129", {"action": "status", "model": Q36, "host": "CT129"}),
    ("get llama 70b running on h100-01", {"action": START, "model": LLAMA70, "host": "h100-01"}),
    ("stop the 8b llama on h100", {"action": "stop", "model": LLAMA8, "host": "h100-01"}),
    ("turn off mtp and restart qwen3.6 on ct129", {"action": "restart", "model": Q36, "host": "CT129", "speculative": "none"}),
    # options
    ("start Qwen3.6-27B on CT129 using both A6000s", {"action": START, "model": Q36, "host": "CT129", "tp": 2}),
    ("Start Qwen3.6-27B on CT129, 2 GPUs, MTP, 131072 ctx", {"action": START, "model": Q36, "host": "CT129", "tp": 2, "speculative": "mtp", "context_length": 131072}),
    ("start Qwen3.6-27B on CT129 no MTP", {"action": START, "model": Q36, "host": "CT129", "speculative": "none"}),
    ("start qwen3.6-27b on ct129 w/o mtp", {"action": START, "model": Q36, "host": "CT129", "speculative": "none"}),
    ("start qwen3.6-27b on ct129 with MTP disabled", {"action": START, "model": Q36, "host": "CT129", "speculative": "none"}),
    ("start Qwen3.6-27B on CT129 with NEXTN", {"action": START, "model": Q36, "host": "CT129", "speculative": "mtp"}),
    ("start Qwen3-Next on h100-01 with multi-token prediction", {"action": START, "model": "Qwen3-Next-80B-A3B-Instruct", "host": "h100-01", "speculative": "mtp"}),
    ("deploy qwen3-30b-a3b on CT130 tp4", {"action": START, "model": "Qwen3-30B-A3B", "host": "CT130", "tp": 4}),
    ("start Llama-3.3-70B on h100-01 4-way tensor parallel", {"action": START, "model": LLAMA70, "host": "h100-01", "tp": 4}),
    ("deploy llama 70b on h100-01 with tensor-parallel-size=4", {"action": START, "model": LLAMA70, "host": "h100-01", "tp": 4}),
    ("start llama 3.1 8b on ct130 on a single gpu", {"action": START, "model": LLAMA8, "host": "CT130", "tp": 1}),
    ("start gemma on ct129 on all gpus", {"action": START, "model": "gemma-3-27b-it", "host": "CT129", "tp": 2}),
    ("start gemma on both gpus", {"action": START, "model": "gemma-3-27b-it"}),  # no host: the planner decides
    ("start Llama-3.3-70B-Instruct on h100-01 GPUs 0-3", {"action": START, "model": LLAMA70, "host": "h100-01", "gpus": [0, 1, 2, 3]}),
    ("start Llama-3.3-70B-Instruct on h100-01 with gpus 4, 5, 6 and 7", {"action": START, "model": LLAMA70, "host": "h100-01", "gpus": [4, 5, 6, 7]}),
    ("start Qwen3.6 on CT129 CUDA_VISIBLE_DEVICES=1", {"action": START, "model": Q36, "host": "CT129", "gpus": [1]}),
    ("start Qwen3.6 on CT129 on the second gpu", {"action": START, "model": Q36, "host": "CT129", "gpus": [1]}),
    ("start qwen3 32b on ct129 with 64k ctx", {"action": START, "model": "Qwen3-32B", "host": "CT129", "context_length": 65536}),
    ("launch Qwen3-32B on CT129 max context 8192", {"action": START, "model": "Qwen3-32B", "host": "CT129", "context_length": 8192}),
    ("start qwen3.6-27b on ct129 with a 262144 token context", {"action": START, "model": Q36, "host": "CT129", "context_length": 262144}),
    ("start Qwen3.6-27B on CT129 --tp 2 --port 30001 --context-length 65536", {"action": START, "model": Q36, "host": "CT129", "tp": 2, "port": 30001, "context_length": 65536}),
    ("start Qwen3.6-27B on ct129:30001", {"action": START, "model": Q36, "host": "CT129", "port": 30001}),
    ("start Qwen3.6-27B on CT129 --quantization awq", {"action": START, "model": Q36, "host": "CT129", "quantization": "awq"}),
    ("start qwen3.6-27b fp8-quantized on ct129", {"action": START, "model": Q36, "host": "CT129", "quantization": "fp8"}),
    ("start Qwen3.6-27B on ct129 using vllm instead of sglang", {"action": START, "model": Q36, "host": "CT129", "engine": "vllm"}),
    ("start Qwen3.6-27B on CT129 with vLLM (not sglang)", {"action": START, "model": Q36, "host": "CT129", "engine": "vllm"}),
    ("start qwen3.6-27b on ct129 using sglang's nextn", {"action": START, "model": Q36, "host": "CT129", "engine": "sglang", "speculative": "mtp"}),
    ("start qwen3.6-27b on ct129 in 5 minutes", {"action": START, "model": Q36, "host": "CT129"}),
    ("start qwen3.6 on ct129 w/ 2 gpus & mtp", {"action": START, "model": Q36, "host": "CT129", "tp": 2, "speculative": "mtp"}),
    ("start qwen3.6-27b on ct129 on high priority", {"action": START, "model": Q36, "host": "CT129"}),
    # same as before
    ("start Qwen3.6-27B on CT129 like last time", {"action": START, "model": Q36, "host": "CT129", "reuse_last": True}),
    ("start qwen 3.6 on ct129 the config we had deployed", {"action": START, "model": Q36, "host": "CT129", "reuse_last": True}),
    ("Can you start Qwen3.6-27B on CT129 with stock MTP that we had deployed?", {"action": START, "model": Q36, "host": "CT129", "speculative": "mtp", "reuse_last": True}),
    ("relaunch it as before on CT129", {"action": "restart", "host": "CT129", "reuse_last": True}),
    # asking back
    ("start llama", {"error": "ambiguous_model"}),
    ("start qwen on CT130", {"error": "ambiguous_model"}),
    ("stop llama 8b and start qwen 27b on ct129", {"error": "ambiguous_model"}),
    ("start Qwen3.5-27B on CT129", {"error": "unknown_model"}),  # never "close enough" to Qwen3.6-27B
    ("start mixtral on CT130", {"error": "unknown_model"}),  # not a typo of mistral
    ("start llava on CT129", {"error": "unknown_model"}),  # not a typo of llama
    ("start the foo server on ct129", {"error": "unknown_model"}),
    ("start Qwen3.6-27B on prod", {"error": "unknown_host"}),
    ("deploy Qwen3.6-27B to staging", {"error": "unknown_host"}),
    ("start Qwen3.6-27B on prod, tp 2", {"error": "unknown_host"}),
    ("start Qwen3.6-27B on the foo box", {"error": "unknown_host"}),
    ("status h200", {"error": "unknown_host"}),
    ("start qwen3.6-27b on ct130 and ct129", {"error": "not_understood"}),
    ("start Qwen3-Next-80B-A3B-Instruct on CT129", {"error": "not_on_host"}),
    ("stop on CT129", {"error": "missing_model"}),
    ("stop everything", {"error": "not_understood"}),
    ("Qwen3.6-27B on CT129 with mtp", {"error": "not_understood"}),
    ("please don't start qwen3.6 on ct129", {"error": "not_understood"}),
    ("start Qwen3.6-27B on CT129 8001", {"error": "not_understood"}),
    ("start Qwen3.6-27B on CT129 --trust-remote-code", {"error": "not_understood"}),
    # values
    ("start Qwen3.6-27B on CT129 port 80", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 port 99999", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 tp 0", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 with 0k context", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 gpu 5", {"error": "invalid_value"}),  # CT129 has GPUs 0 and 1
    ("start Qwen3.6-27B on CT129 gpus 3-1", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 tp 4 on gpus 0,1", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 quantization q4_k_m", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 with fp8 kv cache", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 in 4bit", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 with EAGLE", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 with sglang and vllm", {"error": "invalid_value"}),
    ("start Qwen3.6-27B on CT129 port 30001 port 30002", {"error": "invalid_value"}),
    ("launch Qwen3-30B-A3B on CT130 with expert parallel", {"error": "invalid_value"}),  # not silently dropped
    ("start qwen3.6-27b on ct129 with 0.9 gpu memory", {"error": "invalid_value"}),
    ("start qwen3.6-27b on ct129 with " + "9" * 400 + "k context", {"error": "invalid_value"}),
    ("deploy Llama-3.1-8B-Instruct everywhere", {"error": "not_understood"}),
    # shell syntax
    ("start Qwen3.6-27B on CT129 `rm -rf /`", {"error": "unsafe_input"}),
    ("start Qwen3.6-27B on CT129 `reboot`", {"error": "unsafe_input"}),
    ("start Qwen3.6-27B on CT129 && reboot", {"error": "unsafe_input"}),
    ("deploy Qwen3.6-27B on CT129 &amp;&amp; curl x", {"error": "unsafe_input"}),  # Slack's escaping of &&
    ("start Qwen3.6-27B on CT129 | tee /tmp/x", {"error": "unsafe_input"}),
    ("start Qwen3.6-27B on CT129\nrm -rf /", {"error": "unsafe_input"}),
    ("start ../../etc/passwd on CT129", {"error": "unsafe_input"}),
    ("deploy qwen3.6-27b on ct129 $HOME", {"error": "unsafe_input"}),
    ("start Qwen3.6-27B on CT129 > /etc/motd", {"error": "unsafe_input"}),
    ("start Qwen3.6-27B on CT129 & reboot", {"error": "unsafe_input"}),
    ("start Qwen3.6-27B on CT129 &reboot", {"error": "unsafe_input"}),
    ("start Qwen3.6-27B on CT129 ~; rm -rf /~", {"error": "unsafe_input"}),  # struck, but still refused
    ("start Qwen`reboot`3.6-27B on CT129", {"error": "unsafe_input"}),
    ("0``reboot``", {"error": "unsafe_input"}),  # empty substitutions around a bare command (found by hypothesis)
    ("start Qwen3.6-27B on CT129 `` ``", {"error": "unsafe_input"}),
    ("start Qwen3.6-27B on CT129\u202e", {"error": "unsafe_input"}),  # right-to-left override
]


@pytest.mark.parametrize(("text", "expect"), PHRASINGS, ids=[text[:60] for text, _ in PHRASINGS])
def test_phrasing(text: str, expect: dict) -> None:
    _expect(parse_request(text, FLEET), expect)


def test_there_are_many_phrasings_beyond_the_corpus() -> None:
    assert len(PHRASINGS) >= 40


# ------------------------------------------------------------------------------------------ messages


def test_ambiguous_model_lists_the_candidates() -> None:
    error = parse_request("start llama on h100-01", FLEET)
    assert isinstance(error, ParseError) and error.kind == "ambiguous_model"
    assert LLAMA8 in error.message and LLAMA70 in error.message
    assert f"start {LLAMA8} on h100-01" in error.suggestions


def test_not_on_host_names_the_hosts_that_have_it() -> None:
    error = parse_request("start DeepSeek-V3 on CT129", FLEET)
    assert isinstance(error, ParseError) and error.kind == "not_on_host"
    assert "h100-01" in error.message
    assert error.suggestions == ["start DeepSeek-V3 on h100-01"]


def test_unsafe_input_says_why_and_offers_the_safe_part() -> None:
    error = parse_request("start Qwen3.6-27B on CT129; rm -rf /", FLEET)
    assert isinstance(error, ParseError) and error.kind == "unsafe_input"
    assert "';'" in error.message
    assert error.suggestions == ["start Qwen3.6-27B on CT129"]


def test_unknown_model_suggests_the_local_folder_for_a_quantized_name() -> None:
    error = parse_request("start Qwen3-32B-FP8 on ct129", FLEET)
    assert isinstance(error, ParseError) and error.kind == "unknown_model"
    assert error.suggestions[0] == "start Qwen3-32B on CT129 quantization fp8"


def test_missing_model_suggests_the_models_of_that_host() -> None:
    error = parse_request("start on gpu-box-3", FLEET)
    assert isinstance(error, ParseError) and error.kind == "missing_model"
    assert error.suggestions[:3] == [f"start {m} on gpu-box-3" for m in FLEET.hosts["gpu-box-3"].models]


def test_not_understood_offers_examples_that_work() -> None:
    error = parse_request("make me a sandwich", FLEET)
    assert isinstance(error, ParseError) and error.kind == "not_understood"
    assert error.suggestions and all(isinstance(parse_request(s, FLEET), DeployRequest) for s in error.suggestions)


def test_a_paste_is_refused_without_reading_it() -> None:
    error = parse_request("start Qwen3.6-27B on CT129 " + "x" * 2000, FLEET)
    assert isinstance(error, ParseError) and error.kind == "not_understood"


# ------------------------------------------------------------------------------------------ help


@pytest.mark.parametrize("text", ["help", "/deploy help", "deploybot help", "<@U04ABCDEF> help", "?", "what can you do"])
def test_help_is_recognised(text: str) -> None:
    assert is_help_request(text)
    answer = parse_request(text, FLEET)
    assert isinstance(answer, ParseError) and answer.message == help_text(FLEET)


def test_help_examples_work_against_this_inventory() -> None:
    text = help_text(FLEET)
    for example in example_requests(FLEET):
        assert example in text
        assert isinstance(parse_request(example, FLEET), DeployRequest), example
    for name, host in FLEET.hosts.items():
        assert name in text and all(model in text for model in host.models)


def test_help_on_another_fleet_uses_its_names() -> None:
    other = Inventory(hosts={"dgx-a": InventoryHost(name="dgx-a", gpu_count=8, models=["Mixtral-8x7B-Instruct-v0.1"])})
    examples = example_requests(other)
    assert any("Mixtral-8x7B-Instruct-v0.1 on dgx-a" in e for e in examples)
    assert all(isinstance(parse_request(e, other), DeployRequest) for e in examples)
    assert not is_help_request("help me start qwen")


# ------------------------------------------------------------------------------------------ another fleet

OTHER = Inventory(
    hosts={
        "dgx-a": InventoryHost(
            name="dgx-a",
            gpu_count=8,
            models=["Mixtral-8x7B-Instruct-v0.1", "Qwen2.5-72B-Instruct", "Qwen2.5-7B-Instruct", "Phi-3-mini-4k-instruct"],
        ),
        "rtx01": InventoryHost(name="rtx01", models=["Qwen2.5-7B-Instruct", "Mistral-7B-Instruct-v0.3"]),
    }
)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("spin up mixtral 8x7b on dgx-a", {"action": START, "model": "Mixtral-8x7B-Instruct-v0.1", "host": "dgx-a"}),
        ("start qwen 2.5 72b on DGX A, tp 4", {"action": START, "model": "Qwen2.5-72B-Instruct", "host": "dgx-a", "tp": 4}),
        ("start phi 3 mini on dgx-a with 4k context", {"action": START, "model": "Phi-3-mini-4k-instruct", "host": "dgx-a", "context_length": 4096}),
        ("start mistral 7b on rtx-01", {"action": START, "model": "Mistral-7B-Instruct-v0.3", "host": "rtx01"}),
        ("start qwen 2.5 on rtx01", {"action": START, "model": "Qwen2.5-7B-Instruct", "host": "rtx01"}),  # one there
        ("start qwen 2.5", {"error": "ambiguous_model"}),
        ("start mixtral on rtx01", {"error": "not_on_host"}),
        ("start Qwen2.5-7B on rtx01 on both gpus", {"action": START, "model": "Qwen2.5-7B-Instruct", "host": "rtx01"}),
        ("start Qwen2.5-7B on rtx01 gpu 3", {"action": START, "model": "Qwen2.5-7B-Instruct", "host": "rtx01", "gpus": [3]}),
    ],
)
def test_another_fleet(text: str, expect: dict) -> None:
    _expect(parse_request(text, OTHER), expect)


# ------------------------------------------------------------------------------------------ canonical text


@pytest.mark.parametrize(
    "request_",
    [
        DeployRequest(action="start", model=Q36, host="CT129", speculative="mtp", tp=2, port=30001, context_length=32768),
        DeployRequest(action="start", model=LLAMA70, host="h100-01", engine="vllm", gpus=[4, 5, 6, 7], quantization="fp8"),
        DeployRequest(action="start", model=Q36, host="CT129", speculative="none", reuse_last=True),
        DeployRequest(action="stop", host="CT130"),
        DeployRequest(action="restart", model="Qwen3-32B", host="gpu-box-3", quantization="gptq_marlin"),
        DeployRequest(action="status"),
        DeployRequest(action="logs", model="Qwen3-32B"),
    ],
    ids=lambda r: r.summary(),
)
def test_request_text_reads_back_as_the_same_request(request_: DeployRequest) -> None:
    assert parse_request(request_text(request_), FLEET) == request_


# ------------------------------------------------------------------------------------------ inventory


def test_inventory_from_config_joins_app_yaml_and_the_probed_listing() -> None:
    config = AppConfig(
        hosts={
            "CT129": HostConfig(transport="local", models_dir="/root/models", gpus="2x NVIDIA RTX A6000",
                                models=["Qwen3-32B"]),  # fmt: skip
            "CT130": HostConfig(transport="local", models_dir="/data/models", models=["Llama-3.1-8B-Instruct"]),
            "bare": HostConfig(transport="local", models_dir="/m"),
        }
    )
    inventory = Inventory.from_config(config, probed_models={"CT129": ["Qwen3.6-27B", "bad;name", "Qwen3.6-27B"]})
    # app.yaml's names, then the probe's; unsafe folder names dropped, duplicates once
    assert inventory.hosts["CT129"].models == ["Qwen3-32B", "Qwen3.6-27B"]
    assert inventory.hosts["CT129"].gpu_count == 2
    assert inventory.hosts["CT130"].models == ["Llama-3.1-8B-Instruct"] and inventory.hosts["CT130"].gpu_count is None
    assert inventory.hosts["bare"].models == []
    assert parse_request("start Qwen3.6-27B on CT129 on both gpus", inventory) == DeployRequest(
        action="start", model="Qwen3.6-27B", host="CT129", tp=2
    )


def test_inventory_refuses_unsafe_names() -> None:
    with pytest.raises(ValueError):
        InventoryHost(name="CT129", models=["../etc"])
    with pytest.raises(ValueError):
        InventoryHost(name="ct;129", models=[])


@pytest.mark.parametrize(
    ("description", "count"),
    [("2x NVIDIA RTX A6000 (49140 MiB)", 2), ("8 x H100", 8), ("NVIDIA A100", None), (None, None), ("0x A100", None)],
)
def test_gpu_count_from_description(description: str | None, count: int | None) -> None:
    assert gpu_count_from_description(description) == count


def test_quantization_methods_fit_the_request_field() -> None:
    for method in QUANTIZATION_METHODS:
        assert DeployRequest(action="start", quantization=method).quantization == method


def test_a_combining_mark_on_a_command_s_last_letter_does_not_hide_it() -> None:
    # Found by Hypothesis (test_request_property): NFKC composes "t" + U+0323 into "ṭ"; the reader forgives one letter
    # off and read "& rebooṭ" as a restart, while the shell check looked for "reboot" exactly.
    result = parse_request("0 & reboot\u0323", FLEET)
    assert isinstance(result, ParseError)
    assert result.kind == "unsafe_input"
    assert "rebooṭ" in result.message
