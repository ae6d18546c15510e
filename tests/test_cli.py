"""The `deploybot` commands as a user runs them: parse/plan --json shapes, diagnose, audit, help, manifest, config errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from bot.simhost import build_sim_host
from bot.store import Store
from tests.ports import port_range

CRASHLOG = Path(__file__).resolve().parents[1] / "bot" / "simhost" / "crashlogs" / "sglang-015.json"


@pytest.fixture
def config(tmp_path) -> Path:
    sim = build_sim_host(tmp_path / "CT129", ready_after_s=0.3)
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump({"hosts": {"CT129": {**sim.host_config(), "gpus": "2x NVIDIA RTX A6000"}},
                                    "policy": {"port_range": port_range()}}))  # chat launches: ports of its own
    return path


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_parse_json_prints_exactly_the_public_fields(config, capsys):
    code, out = run(capsys, "--config", str(config), "parse", "--json", "fire up qwen 3.6 27b on ct-129 with MTP, 32k ctx")
    assert code == 0
    assert json.loads(out) == {"action": "start", "model": "Qwen3.6-27B", "host": "CT129", "engine": None,
                               "speculative": "mtp", "draft_model": None, "tp": None, "port": None,
                               "quantization": None, "context_length": 32768, "gpus": None}


def test_parse_json_error_exits_2_with_kind_message_and_suggestions(config, capsys):
    code, out = run(capsys, "--config", str(config), "parse", "--json", "start Qwen3.6-27B on CT999")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["kind"] == "unknown_host" and "CT999" in error["message"] and error["suggestions"]


def test_plan_json_has_the_documented_fields_and_launches_nothing(config, tmp_path, capsys):
    code, out = run(capsys, "--config", str(config), "--db", str(tmp_path / "s.db"), "plan", "--json",
                    "start Qwen3.6-27B on CT129 with stock MTP")
    assert code == 0
    plan = json.loads(out)
    for field in ("engine", "version", "tp", "gpus", "port", "argv", "env", "weights_bytes", "kv_bytes_per_token",
                  "per_gpu", "fits", "risks", "reasons"):
        assert field in plan
    assert plan["tp"] == 2 and plan["fits"] is True and plan["per_gpu"][0]["kv_tokens"] > 0
    assert not (tmp_path / "CT129" / "deploybot-logs").exists() or not list((tmp_path / "CT129" / "deploybot-logs").iterdir())


def test_plan_that_cannot_fit_says_why_with_numbers(tmp_path, capsys):
    sim = build_sim_host(tmp_path / "CT129", models=["Llama-3.1-70B-Instruct"])
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump({"hosts": {"CT129": sim.host_config()}}))
    code, out = run(capsys, "--config", str(path), "--db", str(tmp_path / "s.db"), "plan", "--json",
                    "start Llama-3.1-70B-Instruct on CT129")
    assert code == 1
    failure = json.loads(out)
    assert failure["fits"] is False and "GiB" in failure["reason"] and failure["nearest"]


def test_diagnose_json_fields(tmp_path, capsys):
    log = tmp_path / "server.log"
    log.write_text(json.loads(CRASHLOG.read_text())["log"])
    code, out = run(capsys, "diagnose", str(log), "--engine", "sglang", "--json")
    result = json.loads(out)
    assert code == 1 and result["category"] == "kv_cache_insufficient"
    assert set(result) >= {"category", "cause", "evidence", "next_steps", "confidence", "fix"}
    assert all(set(e) == {"line", "text"} for e in result["evidence"])


def test_diagnose_of_a_process_known_gone_is_never_healthy(tmp_path, capsys):
    log = tmp_path / "server.log"
    log.write_text("INFO 04-29 08:40:31 [model_runner.py:1110] Loading model weights took 14.2466 GB\n")
    assert run(capsys, "diagnose", str(log))[0] == 0  # (a start still under way, as far as the log tells)
    code, out = run(capsys, "diagnose", str(log), "--ended")
    assert code == 1 and "no exit status recorded" in out


def test_audit_lists_the_trail_by_host(tmp_path, capsys):
    import asyncio

    db = tmp_path / "s.db"
    store = Store(db)
    asyncio.run(store.audit("launch", actor="UALICE", host="CT129", deployment_id="d1", result="launched"))
    asyncio.run(store.audit("stop", actor="UBOB", host="CT130", result="stopped"))
    store.close()
    code, out = run(capsys, "--db", str(db), "audit", "--host", "CT129", "--since", "1h")
    assert code == 0 and "UALICE" in out and "launched" in out and "UBOB" not in out


def test_help_gives_examples_from_the_inventory(config, capsys):
    code, out = run(capsys, "--config", str(config), "help")
    assert code == 0 and "CT129" in out and "Qwen3.6-27B" in out


def test_manifest_declares_the_command_and_interactivity(capsys):
    code, out = run(capsys, "manifest", "--socket-mode")
    manifest = json.loads(out)
    assert code == 0
    assert manifest["features"]["slash_commands"][0]["command"] == "/deploy"
    assert manifest["settings"]["interactivity"]["is_enabled"] is True


def test_a_bad_config_names_the_key_and_exits_2(tmp_path, capsys):
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump({"hosts": {"CT129": {"models_dir": "/m", "port": "twenty-two", "known_hosts": "k"}}}))
    code = main(["--config", str(path), "parse", "status"])
    err = capsys.readouterr().err
    assert code == 2 and "hosts.CT129.port" in err


def test_a_missing_config_says_how_to_give_one(tmp_path, capsys):
    code = main(["--config", str(tmp_path / "nope.yaml"), "ask", "status"])
    assert code == 2 and "--config" in capsys.readouterr().err


def test_chat_takes_one_request_a_line_until_the_input_ends(config, tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    lines = "help\nwhat's running on CT129?\nstart Llama-3.1-8B-Instruct on CT129\nstop everything on CT129\n"
    done = subprocess.run([sys.executable, "-m", "bot.cli", "--config", str(config), "--db", str(tmp_path / "s.db"),
                           "chat"], input=lines, capture_output=True, text=True, cwd=root, timeout=120)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "start Llama-3.1-8B-Instruct on CT129" in out  # help's examples come from the inventory
    assert "CT129: GPU 0" in out  # status
    assert "ready at http://" in out and "stopped cleanly" in out
