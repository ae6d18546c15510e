"""Drafter folders in the inventory (issue 16): the probe names the folders that only draft for another model, so a
loose model name never means them while their full name still does; a drafter asked to be served is refused."""

from __future__ import annotations

import json

import pytest

from bot.config import ConfigError, parse_config
from bot.inventory import Inventory, InventoryHost
from bot.models import DeployRequest, PlanFailure
from bot.probe import fetch_engine_help, probe
from bot.remote import LocalRemote
from bot.request import parse_request
from bot.simhost import build_sim_host
from bot.simhost.modelfiles import config_path
from planners.drafters import Drafter, fit_problem
from planners.model import ModelSpec, model_spec
from planners.plan import make_plan
from tests.test_drafters_ssh import DFLASH, EAGLE3, OTHER_VOCAB, drafthost  # noqa: F401 (the fixture)


def _inventory(drafters: list[str]) -> Inventory:
    models = ["Qwen3.6-27B", DFLASH, "Qwen3-32B"]
    return Inventory(hosts={"CT129": InventoryHost(name="CT129", models=models, gpu_count=2, drafters=drafters)})


def test_a_loose_name_does_not_mean_a_drafter_folder_but_its_full_name_does() -> None:
    plain = parse_request("start qwen3.6 on ct129", _inventory([]))
    assert plain.kind == "ambiguous_model"  # type: ignore[union-attr]  # without knowing it drafts
    knowing = _inventory([DFLASH])
    assert parse_request("start qwen3.6 on ct129", knowing) == DeployRequest(
        action="start", model="Qwen3.6-27B", host="CT129"
    )
    named = parse_request(f"start the qwen3.6 model on CT129 with the dflash drafter {DFLASH}", knowing)
    assert isinstance(named, DeployRequest) and (named.speculative, named.draft_model) == ("dflash", DFLASH)


def test_app_yaml_drafters_count_as_drafter_folders(drafthost) -> None:  # noqa: F811
    entry = {**drafthost.host_config(), "drafters": {"Qwen3.6-27B": [DFLASH, "/srv/drafters/Qwen3.6-27B-DFlash-v2"]}}
    config = parse_config({"hosts": {"CT129": entry}})
    inventory = Inventory.from_config(config, {"CT129": ["Qwen3.6-27B", DFLASH]})
    assert inventory.hosts["CT129"].drafters == [DFLASH]  # the path's folder is not among the host's models


async def test_every_probe_names_the_dedicated_drafters_and_a_drafter_is_not_served(drafthost) -> None:  # noqa: F811
    config = parse_config({"hosts": {"CT129": drafthost.host_config()}})
    host = config.hosts["CT129"]
    facts = await probe(LocalRemote("CT129"), "CT129", host, model=DFLASH)
    assert facts.drafter_names == sorted([DFLASH, OTHER_VOCAB, EAGLE3])  # Qwen3-0.6B is a causal LM: servable
    refused = make_plan(DeployRequest(action="start", model=DFLASH, host="CT129"), facts, host, config.policy)
    assert isinstance(refused, PlanFailure)
    assert "DFlash drafter" in refused.reason and "not served on its own" in refused.reason


def test_a_bad_drafters_entry_in_app_yaml_names_the_key(drafthost) -> None:  # noqa: F811
    for bad in (["../escape"], ["/srv/ok/../../etc"], ["name with space"]):
        entry = {**drafthost.host_config(), "drafters": {"Qwen3.6-27B": bad}}
        with pytest.raises((ConfigError, ValueError)) as caught:
            parse_config({"hosts": {"CT129": entry}})
        assert "drafters" in str(caught.value)


async def test_ngram_in_a_request_is_refused_by_the_planner_not_dropped(drafthost) -> None:  # noqa: F811
    config = parse_config({"hosts": {"CT129": drafthost.host_config()}})
    host = config.hosts["CT129"]
    facts = await probe(LocalRemote("CT129"), "CT129", host, model="Qwen3.6-27B")
    request = DeployRequest(action="start", model="Qwen3.6-27B", host="CT129", speculative="ngram")
    refused = make_plan(request, facts, host, config.policy)
    assert isinstance(refused, PlanFailure) and "n-gram" in refused.reason


def _target(**text_overrides: object) -> ModelSpec:
    config = json.loads(config_path("Qwen3.6-27B").read_text())
    config["text_config"].update(text_overrides)
    return model_spec(config)


def test_a_drafter_for_another_hidden_size_or_beyond_the_targets_layers_is_refused() -> None:
    good = Drafter(name="D", path="/m/D", kind="dflash", vocab_size=248320, hidden_size=5120,
                   target_layer_ids=[1, 16, 31, 46, 61], block_size=16)
    assert fit_problem("Qwen3.6-27B", _target(), good) is None
    wide = good.model_copy(update={"hidden_size": 4096})
    assert "hidden states of size 4,096" in (fit_problem("Qwen3.6-27B", _target(), wide) or "")
    deep = good.model_copy(update={"target_layer_ids": [1, 20, 40, 70]})
    assert "reads target layers [1, 20, 40, 70], but Qwen3.6-27B has 64 layers" in (
        fit_problem("Qwen3.6-27B", _target(), deep) or "")
    # a standalone draft model does not read hidden states: only its vocabulary must match
    draft = Drafter(name="S", path="/m/S", kind="draft", vocab_size=248320, hidden_size=1024)
    assert fit_problem("Qwen3.6-27B", _target(), draft) is None


async def test_sglang_without_dflash_in_its_choices_is_refused_naming_the_release(tmp_path) -> None:
    old = build_sim_host(tmp_path / "old", models=("Qwen3.6-27B", DFLASH), engines={"sglang": "0.5.9"})
    config = parse_config({"hosts": {"CT129": old.host_config()}})
    host = config.hosts["CT129"]
    facts = await probe(LocalRemote("CT129"), "CT129", host, model="Qwen3.6-27B", drafters=True)
    facts = facts.model_copy(update={"engine_help": await fetch_engine_help(LocalRemote("CT129"), host, ["sglang"])})
    request = DeployRequest(action="start", model="Qwen3.6-27B", host="CT129", speculative="dflash")
    refused = make_plan(request, facts, host, config.policy)
    assert isinstance(refused, PlanFailure)
    assert "SGLang 0.5.9 has no --speculative-algorithm DFLASH" in refused.reason
    assert "EAGLE3" in refused.reason and "arrived in SGLang 0.5.11" in refused.reason
