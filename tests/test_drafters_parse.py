"""Drafter folders in the inventory (issue 16): the probe names the folders that only draft for another model, so a
loose model name never means them while their full name still does; a drafter asked to be served is refused."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, parse_config
from bot.inventory import Inventory, InventoryHost
from bot.models import DeployRequest, PlanFailure
from bot.probe import probe
from bot.remote import LocalRemote
from bot.request import parse_request
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
