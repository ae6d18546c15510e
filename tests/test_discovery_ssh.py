"""Model discovery over a REAL sshd against the simulated host: the probe's view of the host is the inventory.

An app.yaml without `models:` deploys the seed request; a folder copied onto the host after the bot started is
found by the next request; a model in the Hugging Face cache layout is found and launched from its snapshot
folder (the one refs/main names); `deploybot probe` stores what it saw; an unreachable host keeps its last view.
"""

from __future__ import annotations

import shlex

import yaml

from bot.cli import main as cli_main
from bot.config import Secrets, parse_config
from bot.discovery import Discovery, hosts_named
from bot.events import Launched, Planned, RecordingThread
from bot.models import DeployRequest, ParseError, PlanOverrides
from bot.pipeline import Pipeline, Requester
from bot.remote import RemotePool
from bot.store import Store
from tests.ports import port_range
from tests.procs import pid_alive

SEED = "start Qwen3.6-27B on CT129 with stock MTP"


def no_models_config(sshd, simhost) -> dict:
    """The README's format with no `models:` and no `gpus:`: everything the bot knows comes from the probe."""
    host = {**simhost.host_config(), **sshd.host_overrides()}
    host.pop("models")
    host.pop("gpus")
    return {"hosts": {"CT129": host}, "policy": {"min_margin_gib": 0.5, "port_range": free_port_range()},
            "slack": {"excerpt_interval_s": 0.2}}


def free_port_range() -> list[int]:
    """A port range of this test's own (tests/ports.py): other test runs on the machine launch at the same time."""
    return port_range()


def _cmdline(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return [part.decode() for part in handle.read().split(b"\0") if part]


def test_app_yaml_without_models_deploys_the_seed_request_from_the_cli(sshd, simhost, tmp_path, capsys):
    config_path = tmp_path / "app.yaml"
    config_path.write_text(yaml.safe_dump(no_models_config(sshd, simhost)))
    db = str(tmp_path / "state.db")
    # Options after the subcommand, as the user wrote them.
    assert cli_main(["ask", SEED, "--config", str(config_path), "--db", db]) == 0
    out = capsys.readouterr().out
    assert "ready" in out.lower() and "http://127.0.0.1:" in out
    views = Store(db).host_views_sync()
    assert "Qwen3.6-27B" in views["CT129"].models and len(views["CT129"].gpus) == 2
    assert cli_main(["--config", str(config_path), "ask", "stop Qwen3.6-27B on CT129", "--db", db]) == 0


async def test_a_folder_copied_after_start_is_found_on_the_next_request(sshd, simhost, tmp_path):
    config = parse_config(no_models_config(sshd, simhost))
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    try:
        await pipeline.discovery.probe_hosts()  # what `serve` does at start
        assert "Qwen3-8B" not in pipeline.inventory().hosts["CT129"].models
        refused = await pipeline.parse("start Qwen3-8B on CT129")
        assert isinstance(refused, ParseError) and refused.kind == "unknown_model"
        simhost.add_model("Qwen3-8B")  # copied onto the host while the bot runs
        remote = pipeline.remotes.get("CT129")
        before = remote.round_trips
        parsed = await pipeline.parse("start Qwen3-8B on CT129")
        assert parsed == DeployRequest(action="start", model="Qwen3-8B", host="CT129")
        assert remote.round_trips == before + 1  # ONE probe of the named host, then read again
        assert "Qwen3-8B" in store.host_views_sync()["CT129"].models
        # A name that resolves costs no probe at all.
        assert isinstance(await pipeline.parse("start Qwen3-8B on CT129"), DeployRequest)
        assert remote.round_trips == before + 1
        thread = RecordingThread()
        result = await pipeline.plan(parsed, thread, overrides=PlanOverrides())
        plan = result[0]
        assert plan.model_path == str(simhost.models_dir / "Qwen3-8B")
    finally:
        await pipeline.close()


async def test_a_hugging_face_cache_model_is_found_and_launched_from_its_snapshot(sshd, simhost, tmp_path):
    snapshot = simhost.add_hf_model("Qwen/Qwen3-8B", old_revisions=1)  # two snapshots; refs/main names one
    config = parse_config(no_models_config(sshd, simhost))
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    thread = RecordingThread()
    try:
        # Named as ORG/NAME, never probed before: one probe finds it.
        parsed = await pipeline.parse("start Qwen/Qwen3-8B on CT129")
        assert isinstance(parsed, DeployRequest) and parsed.model == "Qwen3-8B"
        location = next(loc for loc in store.host_views_sync()["CT129"].model_locations if loc.name == "Qwen3-8B")
        assert location.source == "hf_cache" and location.repo == "Qwen/Qwen3-8B" and location.path == str(snapshot)
        outcome = await pipeline.handle_request(parsed, thread, Requester(user="U1"))
        assert outcome.state == "ready", [e.kind for e in thread.events]
        plan = thread.of(Planned)[0].plan
        assert plan.model_path == str(snapshot)
        launched = thread.of(Launched)[0]
        argv = _cmdline(launched.handle.pid)
        assert str(snapshot) in argv, shlex.join(argv)  # the engine reads the snapshot folder, not a repo id
        assert plan.weights_bytes > 15 * 1024**3  # sized from the snapshot's index and its blobs
    finally:
        if thread.of(Launched):
            await pipeline.handle_text("stop Qwen3-8B on CT129", RecordingThread(), Requester(user="U1"))
            assert not pid_alive(thread.of(Launched)[0].handle.pid)
        await pipeline.close()


def test_probe_command_stores_what_it_saw_and_parse_then_resolves(sshd, simhost, tmp_path, capsys):
    config_path = tmp_path / "app.yaml"
    config_path.write_text(yaml.safe_dump(no_models_config(sshd, simhost)))
    db = str(tmp_path / "state.db")
    assert cli_main(["--config", str(config_path), "--db", db, "parse", "start Qwen3-32B on CT129"]) == 2
    assert cli_main(["probe", "CT129", "--config", str(config_path), "--db", db]) == 0
    capsys.readouterr()
    assert cli_main(["parse", "--json", "start Qwen3-32B on CT129", "--config", str(config_path), "--db", db]) == 0
    assert '"model": "Qwen3-32B"' in capsys.readouterr().out
    assert cli_main(["host", "list", "--config", str(config_path), "--db", db]) == 0
    listing = capsys.readouterr().out
    assert "GPU 0 NVIDIA RTX A6000 48 GiB" in listing and "sglang 0.5.10" in listing and "Qwen3-32B" in listing
    simhost.add_hf_model("mistralai/Mistral-7B-Instruct-v0.3")
    assert "Mistral" not in listing
    assert cli_main(["host", "list", "--refresh", "--config", str(config_path), "--db", db]) == 0
    assert "Mistral-7B-Instruct-v0.3 (HF cache mistralai/Mistral-7B-Instruct-v0.3@" in capsys.readouterr().out


async def test_fleet_probe_stores_every_view_and_a_dead_host_keeps_its_last(sshd, simhost, tmp_path):
    raw = no_models_config(sshd, simhost)
    raw["hosts"]["CT130"] = {**raw["hosts"]["CT129"]}
    config = parse_config(raw)
    store = Store(tmp_path / "state.db")
    pool = RemotePool(config.hosts)
    discovery = Discovery(config, store, pool)
    try:
        first = await discovery.probe_hosts()
        assert all(not isinstance(r, BaseException) for r in first.values())
        assert set(store.host_views_sync()) == {"CT129", "CT130"}
        sshd.drop()
        await pool.close()
        again = await Discovery(config, store, RemotePool(config.hosts)).probe_hosts(["CT130"])
        assert isinstance(again["CT130"], BaseException)
        assert store.host_views_sync()["CT130"].models == first["CT130"].models  # last view kept
    finally:
        await pool.close()


def test_hosts_named_finds_host_words_only():
    hosts = ["CT129", "gpu3", "node-b"]
    assert hosts_named("start x on ct129 please", hosts) == ["CT129"]
    assert hosts_named("put the gemma on node\u2011b.", hosts) == ["node-b"]  # a non-breaking hyphen
    assert hosts_named("start x on CT1290", hosts) == []
    assert hosts_named("start x on gpu3.example", hosts) == []


async def test_a_host_that_cannot_be_probed_is_named_in_the_parse_error(sshd, simhost, tmp_path):
    raw = no_models_config(sshd, simhost)
    raw["hosts"]["CT129"]["python"] = str(tmp_path / "no-such-env" / "bin" / "python3")
    pipeline = Pipeline(parse_config(raw), Store(tmp_path / "state.db"), secrets=Secrets())
    try:
        refused = await pipeline.parse(SEED)
    finally:
        await pipeline.close()
    assert isinstance(refused, ParseError) and refused.kind == "unknown_model"
    assert "CT129 could not be probed" in refused.message and "engine python" in refused.message
