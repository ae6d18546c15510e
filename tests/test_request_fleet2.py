"""The parser on a fleet its authors did not design it around (issue 11), and the rules that came out of it.

fleet2_dev.jsonl was developed against; fleet2_heldout.jsonl (every 4th request, split off before any parser
change) was scored once at the end: 29/45 before the changes, 44/45 after (the one miss, "the L40S box", was then
fixed). HELDOUT_FLOOR is that first after-figure, so a change that loses ground on it fails here.
fleet3_blind.jsonl (a third fleet: gpt-oss, Kimi, medgemma, SmolLM3, MI300X...) was written after those changes and
scored once before any further one: 66/68 (missed: "with flash attention 3", "gemma" for medgemma; both then
fixed). BLIND_FLOOR is that first figure.
"""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from rich.console import Console

from bot.events import Parsed
from bot.inventory import Inventory, InventoryHost
from bot.models import DeployRequest, ParseError
from bot.request import parse_request, request_text
from handlers.console import ConsoleThread
from handlers.slack.blocks.status import status_blocks
from handlers.slack.board import StatusBoard
from tests.corpus_score import CORPUS, FLEET2, corpus_lines, mismatch, score
from tests.test_request import FLEET

DEV_FLOOR = 97.0
HELDOUT_FLOOR = 97.0  # 44/45 = 97.8% when first scored
BLIND_FLOOR = 97.0  # 66/68 = 97.1% when first scored
FLEET_2 = Inventory.from_corpus(FLEET2)


def test_fleet2_dev_corpus_parses_right() -> None:
    result = score(CORPUS / "fleet2_dev.jsonl", FLEET_2)
    assert result.total >= 130
    assert result.percent >= DEV_FLOOR, result.failures


def test_fleet2_heldout_corpus_stays_above_its_floor() -> None:
    result = score(CORPUS / "fleet2_heldout.jsonl", FLEET_2)
    assert result.total >= 40
    assert result.percent >= HELDOUT_FLOOR, result.failures


def test_fleet3_blind_corpus_stays_above_its_floor() -> None:
    result = score(CORPUS / "fleet3_blind.jsonl", Inventory.from_corpus(CORPUS / "fleet3_inventory.json"))
    assert result.total >= 60
    assert result.percent >= BLIND_FLOOR, result.failures


def test_heldout_is_every_fourth_request_and_shares_none_with_dev() -> None:
    dev = {case["text"] for case in corpus_lines(CORPUS / "fleet2_dev.jsonl")}
    held = {case["text"] for case in corpus_lines(CORPUS / "fleet2_heldout.jsonl")}
    assert not dev & held and 3 * len(held) - 3 <= len(dev) <= 3 * len(held) + 3


def test_the_scorer_fails_what_it_should() -> None:
    request = DeployRequest(action="start", model="Phi-3.5-mini-instruct", host="gpu3")
    assert mismatch(request, {"action": "start", "model": "Phi-3.5-mini-instruct", "host": "gpu3"}) is None
    assert mismatch(request, {"action": "start", "model": "Phi-3.5-mini-instruct"}) is not None
    assert mismatch(request, {"error": "unknown_host"}) is not None
    assert mismatch(request, {"action": "start", "model": "Phi-3.5-mini-instruct", "host": "gpu3",
                              "ignored": ["flash attention"]}) is not None  # fmt: skip


# ------------------------------------------------------------------------------------------ distinctive words


@pytest.mark.parametrize(
    ("text", "candidates"),
    [
        ("start the vision one on dgx-01", ["Llama-3.2-11B-Vision-Instruct", "Qwen2.5-VL-72B-Instruct"]),
        ("start the distill on dgx-01", ["DeepSeek-R1-Distill-Qwen-32B", "DeepSeek-R1-Distill-Llama-70B"]),
    ],
)
def test_a_word_several_folders_share_is_ambiguous_with_the_candidates(text: str, candidates: list[str]) -> None:
    error = parse_request(text, FLEET_2)
    assert isinstance(error, ParseError) and error.kind == "ambiguous_model"
    assert all(c in error.message for c in candidates)
    assert all(any(c in s for s in error.suggestions) for c in candidates)


def test_a_word_one_letter_from_a_distinctive_word_is_not_that_model() -> None:
    # "demo" is one letter from "nemo" (Mistral-Nemo on rtx-box): only family names are typo-corrected.
    got = parse_request("need the vision model on gpu3 for a demo. can you start it?", FLEET_2)
    assert isinstance(got, DeployRequest) and got.model == "Llama-3.2-11B-Vision-Instruct"
    assert got.ignored == ["for a demo"]


# ------------------------------------------------------------------------------------------ hosts and GPUs


def test_a_host_named_like_a_gpu_is_the_host() -> None:
    got = parse_request("start phi on gpu3", FLEET_2)
    assert isinstance(got, DeployRequest) and (got.host, got.gpus) == ("gpu3", None)
    got = parse_request("start phi on node-a gpu 3", FLEET_2)  # with another host named, "gpu 3" is its GPU
    assert isinstance(got, DeployRequest) and (got.host, got.gpus) == ("node-a", [3])


@pytest.mark.parametrize("text", ["start Qwen3.6-27B on gpu3", "deploy Qwen3.6-27B to gpu1", "start llama 8b @gpu0"])
def test_on_gpuN_with_no_such_host_is_an_unknown_host(text: str) -> None:
    error = parse_request(text, FLEET)
    assert isinstance(error, ParseError) and error.kind == "unknown_host", error
    assert "name the host too" in error.message and error.suggestions


def test_a_gpu_of_a_named_host_is_still_a_gpu() -> None:
    got = parse_request("start Qwen3.6-27B on CT129 on gpu1", FLEET)
    assert isinstance(got, DeployRequest) and (got.host, got.gpus) == ("CT129", [1])


# ------------------------------------------------------------------------------------------ unicode

DASHES = ["\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015", "\u2212", "\ufe63", "\uff0d", "\ufe58"]
SPACES = ["\u00a0", "\u2009", "\u202f", "\u3000", "\u2002", "\u200a"]


@pytest.mark.parametrize("dash", DASHES, ids=lambda c: f"U+{ord(c):04X}")
def test_every_dash_works_in_hosts_models_and_ranges(dash: str) -> None:
    text = f"start Phi{dash}3.5{dash}mini{dash}instruct on rtx{dash}box gpus 0{dash}1"
    got = parse_request(text, FLEET_2)
    assert got == DeployRequest(action="start", model="Phi-3.5-mini-instruct", host="rtx-box", gpus=[0, 1])


@pytest.mark.parametrize("space", SPACES, ids=lambda c: f"U+{ord(c):04X}")
def test_every_space_works(space: str) -> None:
    got = parse_request(space.join(["start", "the", "math", "model", "on", "node", "a", "tp", "2"]), FLEET_2)
    assert got == DeployRequest(action="start", model="Qwen2.5-Math-7B-Instruct", host="node-a", tp=2)


@pytest.mark.parametrize("invisible", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"])
def test_invisible_characters_inside_names_are_dropped(invisible: str) -> None:
    got = parse_request(f"start gemma-2-9b{invisible}-it on la{invisible}b2", FLEET_2)
    assert got == DeployRequest(action="start", model="gemma-2-9b-it", host="lab2")


def test_smart_quotes_and_fullwidth_text() -> None:
    assert parse_request("status \uff52\uff54\uff58\uff0d\uff42\uff4f\uff58", FLEET_2) == DeployRequest(
        action="status", host="rtx-box"
    )
    got = parse_request("start \u00abthe math model\u00bb on \u201cnode-a\u201d", FLEET_2)
    assert got == DeployRequest(action="start", model="Qwen2.5-Math-7B-Instruct", host="node-a")


# ------------------------------------------------------------------------------------------ nothing dropped


# Issue 16 turned the interim refusal of drafters ("not supported yet") into drafter requests: the same texts now
# read as the drafter they name, and what is still unsupported (medusa) is refused with the phrase quoted.
@pytest.mark.parametrize(
    ("text", "speculative", "draft_model", "ignored"),
    [
        ("start Qwen3.6-27B on CT129 with the dflash drafter", "dflash", None, []),
        ("start Qwen3.6-27B on CT129 with our drafter", "drafter", None, []),
        ("start Qwen3-32B on CT129 draft model Llama-3.1-8B-Instruct", "draft", "Llama-3.1-8B-Instruct", []),
        ("start Qwen3.6-27B on CT129 eagle3 drafter foo", "eagle3", None, ["foo"]),
    ],
)
def test_a_drafter_phrase_reads_as_that_drafter_and_its_name_is_not_a_second_model(
    text: str, speculative: str, draft_model: str | None, ignored: list[str]
) -> None:
    got = parse_request(text, FLEET)
    assert isinstance(got, DeployRequest), got
    assert (got.speculative, got.draft_model, got.ignored) == (speculative, draft_model, ignored)
    assert got.model in ("Qwen3.6-27B", "Qwen3-32B")


def test_medusa_is_refused_as_not_yet_supported_with_the_phrase_quoted() -> None:
    error = parse_request("start Qwen3.6-27B on CT129 using medusa heads", FLEET)
    assert isinstance(error, ParseError) and error.kind == "invalid_value", error
    assert "not supported yet" in error.message and "'using medusa heads'" in error.message
    assert error.suggestions[0] == "start Qwen3.6-27B on CT129"


def test_the_seed_drafter_request_reads_as_the_dflash_drafter() -> None:
    got = parse_request("start Qwen3.6-27B on CT129 with the dflash drafter", FLEET)
    assert got == DeployRequest(action="start", model="Qwen3.6-27B", host="CT129", speculative="dflash")


def test_without_a_drafter_is_named_not_dropped() -> None:
    got = parse_request("start Qwen3.6-27B on CT129 without a drafter", FLEET)
    assert isinstance(got, DeployRequest) and got.speculative is None and got.ignored == ["without a drafter"]


@pytest.mark.parametrize(
    ("text", "ignored"),
    [
        ("start Qwen3.6-27B on CT129 with flash attention", ["with flash attention"]),
        ("start Qwen3.6-27B on CT129 in 5 minutes", ["in 5 minutes"]),
        ("start Qwen3.6-27B on CT129 for the hackathon, thanks", ["for the hackathon"]),
        ("start Qwen3.6-27B on CT129 bitte schnell", ["bitte schnell"]),
        ("start Qwen3.6-27B on CT129 请", ["请"]),
        ("start Qwen3.6-27B on CT129 please, thanks!", []),
    ],
)
def test_what_the_parser_did_not_act_on_is_named(text: str, ignored: list[str]) -> None:
    got = parse_request(text, FLEET)
    assert isinstance(got, DeployRequest) and got.model == "Qwen3.6-27B" and got.ignored == ignored


def test_request_text_never_carries_ignored_phrases_back() -> None:
    got = parse_request("start Qwen3.6-27B on CT129 with flash attention", FLEET)
    assert isinstance(got, DeployRequest)
    assert parse_request(request_text(got), FLEET) == got.model_copy(update={"ignored": []})


@pytest.mark.parametrize(
    ("text", "suggestions"),
    [
        ("move the math model to gpu3", ["start Qwen2.5-Math-7B-Instruct on gpu3"]),
        ("move mixtral from node-a to dgx-01", ["start Mixtral-8x7B-Instruct-v0.1 on dgx-01",
                                                "stop Mixtral-8x7B-Instruct-v0.1 on node-a"]),
    ],
)  # fmt: skip
def test_a_move_is_asked_back_as_a_start_and_a_stop(text: str, suggestions: list[str]) -> None:
    error = parse_request(text, FLEET_2)
    assert isinstance(error, ParseError) and error.kind == "not_understood"
    assert "move" in error.message and error.suggestions == suggestions


# ------------------------------------------------------------------------------------------ the reply shows it


def _ignoring() -> DeployRequest:
    got = parse_request("start Qwen3.6-27B on CT129 with flash attention", FLEET)
    assert isinstance(got, DeployRequest)
    return got


def test_the_console_names_what_was_ignored() -> None:
    out = io.StringIO()
    asyncio.run(ConsoleThread(Console(file=out, width=200)).emit(Parsed(request=_ignoring())))
    assert "I ignored: 'with flash attention'" in out.getvalue()


def test_the_slack_status_board_names_what_was_ignored() -> None:
    board = StatusBoard()
    board.apply(Parsed(request=_ignoring()))
    text = json.dumps([b.to_dict() for b in status_blocks(board)], ensure_ascii=False)
    assert "I ignored: 'with flash attention'" in text


def test_a_request_stored_before_ignored_existed_still_loads() -> None:
    old = '{"action": "start", "model": "Qwen3.6-27B", "host": "CT129", "reuse_last": false}'
    assert DeployRequest.model_validate_json(old).ignored == []


def test_another_small_fleet_with_its_own_words() -> None:
    fleet = Inventory(
        hosts={
            "tower": InventoryHost(name="tower", gpu_count=2, gpus="2x NVIDIA L4 (23034 MiB)",
                                   models=["Qwen2.5-Coder-32B-Instruct", "Qwen2.5-32B-Instruct", "whisper-large-v3"]),
        }
    )  # fmt: skip
    assert parse_request("host the coder on tower", fleet) == DeployRequest(
        action="start", model="Qwen2.5-Coder-32B-Instruct", host="tower"
    )
    assert parse_request("put the 32b on the l4 box", fleet).kind == "ambiguous_model"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("i'd like phi on gpu3", DeployRequest(action="start", model="Phi-3.5-mini-instruct", host="gpu3")),
        ("could we have the coder on lab2 please",
         DeployRequest(action="start", model="Qwen2.5-Coder-7B-Instruct", host="lab2")),
        ("remove phi from gpu3", DeployRequest(action="stop", model="Phi-3.5-mini-instruct", host="gpu3")),
        ("what's running everywhere?", DeployRequest(action="status")),
        ("status of all hosts", DeployRequest(action="status")),
        ("any gpus free anywhere?", DeployRequest(action="status")),
        ("stop the r1 on lab2", DeployRequest(action="stop", model="DeepSeek-R1-Distill-Llama-8B", host="lab2")),
        ("please turn the vision model off on gpu3",
         DeployRequest(action="stop", model="Llama-3.2-11B-Vision-Instruct", host="gpu3")),
    ],
)  # fmt: skip
def test_more_everyday_frames(text: str, expect: DeployRequest) -> None:
    assert parse_request(text, FLEET_2) == expect


def test_a_fleet_wide_change_is_still_refused() -> None:
    error = parse_request("restart phi everywhere", FLEET_2)
    assert isinstance(error, ParseError) and error.kind == "not_understood" and "one host" in error.message


def test_a_distinctive_word_that_agrees_with_no_named_model_is_an_ordinary_word() -> None:
    # "next" is a word of Qwen3-Next's folder; next to an exact name it names nothing, and the reply says so.
    got = parse_request("start qwen3.6-27b on ct129 next week", FLEET)
    assert got == DeployRequest(action="start", model="Qwen3.6-27B", host="CT129", ignored=["next"])
    got = parse_request("start the next one on h100-01", FLEET)
    assert isinstance(got, DeployRequest) and got.model == "Qwen3-Next-80B-A3B-Instruct"


def test_deploybot_parse_shows_what_was_ignored(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from bot.cli import main

    config = tmp_path / "app.yaml"
    config.write_text("hosts:\n  CT129:\n    transport: local\n    models_dir: /m\n    models: [Qwen3.6-27B]\n")
    assert main(["--config", str(config), "parse", "--json", "start Qwen3.6-27B on CT129 with flash attention"]) == 0
    assert json.loads(capsys.readouterr().out)["ignored"] == ["with flash attention"]
    assert main(["--config", str(config), "parse", "start Qwen3.6-27B on CT129 with flash attention"]) == 0
    assert "I ignored: 'with flash attention'" in capsys.readouterr().out


QUANTIZED = Inventory(
    hosts={
        "jupiter": InventoryHost(name="jupiter", gpu_count=2, models=[
            "Meta-Llama-3-8B-Instruct", "Llama-3.1-8B", "Qwen2.5-14B-Instruct-AWQ", "Qwen2.5-14B-Instruct-GPTQ-Int4"]),
        "mars": InventoryHost(name="mars", models=["Yi-1.5-34B-Chat", "internlm2_5-7b-chat", "c4ai-command-r-v01"]),
    }
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "model"),
    [
        ("start the awq qwen on jupiter", "Qwen2.5-14B-Instruct-AWQ"),
        ("start the gptq one on jupiter", "Qwen2.5-14B-Instruct-GPTQ-Int4"),
        ("start command r on mars", "c4ai-command-r-v01"),
        ("start internlm on mars", "internlm2_5-7b-chat"),
    ],
)
def test_a_quantization_or_a_family_in_a_folder_name_picks_that_folder(text: str, model: str) -> None:
    got = parse_request(text, QUANTIZED)
    assert isinstance(got, DeployRequest) and got.model == model, got


def test_a_word_of_several_folders_is_ambiguous_not_unknown() -> None:
    error = parse_request("put the chat model on mars", QUANTIZED)
    assert isinstance(error, ParseError) and error.kind == "ambiguous_model"
    assert "Yi-1.5-34B-Chat" in error.message and "internlm2_5-7b-chat" in error.message
    assert parse_request("start qwen 14b on jupiter", QUANTIZED).kind == "ambiguous_model"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("start qwen3.6 on ct129 w/ the dflash drafter pls", {"speculative": "dflash", "ignored": []}),
        ("start Qwen3.6-27B on CT129 with spec decode using a small draft model", {"speculative": "draft"}),
    ],
)
def test_the_drafter_phrase_is_read_whole_and_no_further(text: str, expect: dict) -> None:
    got = parse_request(text, FLEET)
    assert isinstance(got, DeployRequest) and got.model == "Qwen3.6-27B" and got.host == "CT129", got
    assert {k: getattr(got, k) for k in expect} == expect


def test_an_unknown_drafter_name_is_refused_quoted_as_written() -> None:
    error = parse_request("start Qwen3.6-27B on CT129 with eagle3 drafter Qwen3-8B-EAGLE3 now", FLEET)
    assert isinstance(error, ParseError) and error.kind == "unknown_model"
    assert "'Qwen3-8B-EAGLE3'" in error.message


def test_a_count_of_a_gpu_model_is_the_tp() -> None:
    got = parse_request("start mistral on ct130 with 4 x 4090", FLEET)
    assert got == DeployRequest(action="start", model="Mistral-Small-3.2-24B-Instruct-2506", host="CT130", tp=4)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("statr mixtral on node-a", DeployRequest(action="start", model="Mixtral-8x7B-Instruct-v0.1", host="node-a")),
        ("status k8s gpu pool a 1", DeployRequest(action="status", host="k8s-gpu-pool-a-1")),
    ],
)
def test_swapped_letters_and_long_host_names(text: str, expect: DeployRequest) -> None:
    fleet = Inventory(hosts={**FLEET_2.hosts, "k8s-gpu-pool-a-1": InventoryHost(name="k8s-gpu-pool-a-1")})
    assert parse_request(text, fleet) == expect
