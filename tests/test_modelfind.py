"""Where the probe finds models (bot/agents/modelfind.py, run here as the plain module it also is on a host):
plain folders, ORG/NAME one level down, the Hugging Face hub cache with refs/main, HF_HUB_CACHE / HF_HOME, and
what happens when two places hold one name. Plus the store's migration of the old model lists to host views."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.agents import modelfind
from bot.simhost.hfcache import write_hf_cache_model
from bot.simhost.modelfiles import write_model_folder
from bot.store import Store
from bot.store_schema import MIGRATIONS


@pytest.fixture(autouse=True)
def no_real_cache(monkeypatch, tmp_path):
    """Never the real user's hub cache: every test names its own."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-hf-home"))


def test_plain_nested_and_hub_models_with_their_paths(tmp_path, monkeypatch):
    models = tmp_path / "models"
    write_model_folder(models, "Qwen3-32B")
    write_model_folder(models / "meta-llama", "Llama-3.1-8B-Instruct")  # huggingface-cli --local-dir layout
    (models / "notes").mkdir()  # no config.json anywhere: not a model
    (models / "half-copied").mkdir()
    hub = tmp_path / "hf" / "hub"
    snapshot = write_hf_cache_model(hub, "Qwen/Qwen3-8B", old_revisions=2)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    found = modelfind.find_models([str(models)])
    assert sorted(found) == ["Llama-3.1-8B-Instruct", "Qwen3-32B", "Qwen3-8B"]
    assert found["Llama-3.1-8B-Instruct"]["repo"] == "meta-llama/Llama-3.1-8B-Instruct"
    hub_model = found["Qwen3-8B"]
    assert hub_model["source"] == "hf_cache" and hub_model["path"] == str(snapshot)
    assert hub_model["revision"] == snapshot.name  # refs/main's commit, though older snapshots are newer on disk
    assert modelfind.locate(found, "Qwen/Qwen3-8B") is hub_model


def test_hf_hub_cache_wins_over_hf_home_and_a_missing_ref_takes_the_only_snapshot(tmp_path, monkeypatch):
    hub = tmp_path / "elsewhere"
    snapshot = write_hf_cache_model(hub, "mistralai/Mistral-7B-Instruct-v0.3")
    (hub / "models--mistralai--Mistral-7B-Instruct-v0.3" / "refs" / "main").unlink()
    write_hf_cache_model(tmp_path / "hf" / "hub", "Qwen/Qwen3-8B")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    found = modelfind.find_models([])
    assert list(found) == ["Mistral-7B-Instruct-v0.3"]  # HF_HUB_CACHE is the cache, as huggingface_hub reads it
    assert found["Mistral-7B-Instruct-v0.3"]["path"] == str(snapshot)


def test_an_incomplete_download_is_no_model(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    snapshot = write_hf_cache_model(hub, "Qwen/Qwen3-8B")
    (snapshot / "config.json").unlink()
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    assert modelfind.find_models([]) == {}


def test_cache_entries_without_an_org_datasets_and_locks(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    write_hf_cache_model(hub, "gpt2", config="Qwen3-8B")  # a repo id without an organisation: models--gpt2
    write_hf_cache_model(hub, "some/dataset", config="Qwen3-8B")
    (hub / "models--some--dataset").rename(hub / "datasets--some--dataset")
    (hub / ".locks" / "models--gpt2").mkdir(parents=True)
    monkeypatch.setenv("HOME_OF_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", "$HOME_OF_CACHE/hub")  # expanded, as huggingface_hub does
    found = modelfind.find_models([])
    assert list(found) == ["gpt2"] and found["gpt2"]["repo"] == "gpt2"


def test_one_name_in_two_places_keeps_both_under_distinct_names(tmp_path, monkeypatch):
    models = tmp_path / "models"
    write_model_folder(models, "Qwen3-8B")
    hub = tmp_path / "hub"
    write_hf_cache_model(hub, "Qwen/Qwen3-8B")
    write_hf_cache_model(hub, "unsloth/Qwen3-8B", config="Qwen3-8B")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    found = modelfind.find_models([str(models)])
    assert found["Qwen3-8B"]["source"] == "folder"  # the folder a person put in models_dir keeps the name
    assert {found["Qwen--Qwen3-8B"]["repo"], found["unsloth--Qwen3-8B"]["repo"]} == {"Qwen/Qwen3-8B", "unsloth/Qwen3-8B"}


def test_the_old_model_lists_become_host_views(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for script in MIGRATIONS[:3]:
        db.executescript(script)
    db.execute("PRAGMA user_version = 3")
    db.execute("INSERT INTO host_models VALUES (?,?,?)", ("CT129", json.dumps(["Qwen3.6-27B"]), "2026-11-30T10:00:00+00:00"))
    db.commit()
    db.close()
    store = Store(path)
    assert store.schema_version == len(MIGRATIONS)
    view = store.host_views_sync()["CT129"]
    assert view.models == ["Qwen3.6-27B"] and view.probed_at.year == 2026 and view.gpus == []
    assert store.known_models_sync() == {"CT129": ["Qwen3.6-27B"]}

